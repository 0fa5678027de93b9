//go:build cgo

package onnx

import (
	"context"
	"testing"
)

// TestDecodeAllocs holds a decode step to no Go heap allocation on the
// shared buffer and the padded hand-over. The shared buffer creates nothing
// per step. The padded hand-over creates its tensors once per block of
// padBlock positions and reuses them inside it, so the steady state is
// measured inside a block, after a warm-up that crossed a block boundary.
// The exact-length hand-over (genai graphs without a shared buffer, and
// graphs whose padded past failed its proof, as the position-mask form) needs a
// present tensor of a new length per KV slot and step, and onnxruntime_go
// cannot reshape one: three Go allocations in its constructor and one per
// bind, five per slot, none of them ours.
func TestDecodeAllocs(t *testing.T) {
	const bindingPerSlot = 5
	for name, limit := range map[string]func(slots int) float64{
		"optimum-fp32":   func(int) float64 { return 0 },
		"optimum-int4":   func(int) float64 { return 0 },
		"optimum-merged": func(int) float64 { return 0 },
		"optimum-fp16":   func(int) float64 { return 0 },
		"optimum-q4f16":  func(int) float64 { return 0 },
		"genai-fp32":     func(slots int) float64 { return float64(bindingPerSlot * slots) },
		// The padded past fails its proof on this graph: exact hand-over.
		"optimum-mask-positions": func(slots int) float64 { return float64(bindingPerSlot * slots) },
		"gqa-fp32":               func(int) float64 { return 0 },
		"gqa-fp16":               func(int) float64 { return 0 },
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
			step := func(pos int) {
				if _, err := b.Forward(ctx, []int32{5}, pos); err != nil {
					t.Fatal(err)
				}
			}
			// Warm up across the first block boundary into the second block.
			pos := 3
			for ; pos < padBlock+5; pos++ {
				step(pos)
			}
			const runs = 40 // AllocsPerRun makes one more; all inside the block
			if pos+runs+1 > 2*padBlock {
				t.Fatalf("measured steps %d..%d leave the block", pos, pos+runs+1)
			}
			allocs := testing.AllocsPerRun(runs, func() {
				step(pos)
				pos++
			})
			slots := len(b.io.pasts)
			if want := limit(slots); allocs > want {
				t.Errorf("%.1f allocations per decode step, want at most %.0f (%d KV slots)", allocs, want, slots)
			}
		})
	}
}
