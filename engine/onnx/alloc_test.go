//go:build cgo

package onnx

import (
	"context"
	"testing"
)

func TestDecodeAllocs(t *testing.T) {
	for _, name := range []string{"optimum-fp32", "gqa-fp32", "gqa-fp16"} {
		t.Run(name, func(t *testing.T) {
			b := openModel(t, writeModel(t, variants()[name]), Options{})
			ctx := context.Background()
			if err := b.Reserve(200); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Forward(ctx, []int32{1, 2, 3}, 0); err != nil {
				t.Fatal(err)
			}
			pos := 3
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := b.Forward(ctx, []int32{5}, pos); err != nil {
					t.Fatal(err)
				}
				pos++
			})
			t.Logf("%s: %.1f allocs per decode step", name, allocs)
		})
	}
}
