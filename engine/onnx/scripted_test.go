//go:build cgo

package onnx

import (
	"context"
	"slices"
	"testing"
)

func argmaxOf(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

func TestScriptedGreedyLoop(t *testing.T) {
	for name, cfg := range variants() {
		t.Run(name, func(t *testing.T) {
			cfg.Script = []int32{10, 20, 30, 40, 50}
			cfg.EOS = []int{255}
			b := openModel(t, writeModel(t, cfg), Options{})
			ctx := context.Background()
			if err := b.Reserve(16); err != nil {
				t.Fatal(err)
			}
			logits, err := b.Forward(ctx, []int32{1, 2, 3, 4}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []int32
			pos := 4
			for len(got) < 10 {
				tok := argmaxOf(logits)
				got = append(got, tok)
				if tok == 255 {
					break
				}
				if logits, err = b.Forward(ctx, []int32{tok}, pos); err != nil {
					t.Fatal(err)
				}
				pos++
			}
			if want := []int32{10, 20, 30, 40, 50, 255}; !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}
