//go:build cgo

package onnx

import (
	"context"
	"math"
	"slices"
	"testing"
)

// argmaxOf is the index of the first largest value, by the same blocked
// scan the engine's greedy sampler uses, so that the benchmarks' bare loop
// and Engine.Stream pay alike for it.
func argmaxOf(v []float32) int32 {
	best, top := 0, float32(math.Inf(-1))
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		if w[0] > top || w[1] > top || w[2] > top || w[3] > top ||
			w[4] > top || w[5] > top || w[6] > top || w[7] > top {
			for j, x := range w {
				if x > top {
					best, top = i+j, x
				}
			}
		}
	}
	for ; i < len(v); i++ {
		if v[i] > top {
			best, top = i, v[i]
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
