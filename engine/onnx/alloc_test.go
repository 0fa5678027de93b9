//go:build cgo

package onnx

import (
	"context"
	"testing"
)

// TestDecodeAllocs holds a decode step to what the binding itself costs.
// On the shared buffer a step creates no tensor and allocates nothing. On
// the present→past hand-over every KV slot needs a tensor of a new length
// per step, and onnxruntime_go cannot reshape one: its constructor makes
// three Go allocations per tensor and each bind one more, five per slot
// per step, none of them ours.
func TestDecodeAllocs(t *testing.T) {
	const bindingPerSlot = 5
	for name, limit := range map[string]func(slots int) float64{
		"optimum-fp32": func(slots int) float64 { return float64(bindingPerSlot * slots) },
		"gqa-fp32":     func(int) float64 { return 0 },
		"gqa-fp16":     func(int) float64 { return 0 },
	} {
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
			slots := 2 * len(b.io.pastKeys)
			if want := limit(slots); allocs > want {
				t.Errorf("%.1f allocations per decode step, want at most %.0f (%d KV slots)", allocs, want, slots)
			}
		})
	}
}
