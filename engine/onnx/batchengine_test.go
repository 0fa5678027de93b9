//go:build cgo

package onnx

import (
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// The engine's batching contract (enginetest.RunBatchConformance) on the
// real runtime: a random-weight model, so every prompt gets its own
// answer, decoded by Engine.Stream in batches of up to 8 against each
// request alone, constrained requests included.
func TestBatchConformance(t *testing.T) {
	for _, name := range []string{"optimum-fp32", "optimum-merged", "optimum-int4"} {
		base := variants()[name]
		t.Run(name, func(t *testing.T) {
			dir := modelDir(t, "random-"+name, byteModel(base, ""))
			enginetest.RunBatchConformance(t, enginetest.BatchHarness{
				New: func(t *testing.T, opts ...engine.Option) *engine.Engine {
					return newEngineOn(t, openModel(t, dir, Options{MaxBatch: 8}), opts...)
				},
				Constraint: func(*engine.Engine) engine.Constraint { return letters{min: 3} },
			})
		})
	}
}
