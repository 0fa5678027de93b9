//go:build cgo

package onnx

import (
	"errors"
	"testing"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/onnxgen"
)

// A runtime step that fails (here a token id past the vocabulary, which
// the graph's Gather refuses; the engine checks ids first, a caller of
// the backend may not) is a *StepError with the code inference_failed,
// the step's positions and the graph, on every cache strategy and for a
// prefill and a decode step alike. Nothing of it is cached, and the next
// steps give the oracle's logits.
func TestStepErrorLeavesBackendUsable(t *testing.T) {
	for _, name := range []string{"optimum-fp32", "gqa-fp32", "genai-fp32"} {
		t.Run(name, func(t *testing.T) {
			cfg := variants()[name]
			b := openModel(t, modelDir(t, "random-"+name, cfg), Options{})
			o, err := onnxgen.NewOracle(cfg)
			if err != nil {
				t.Fatal(err)
			}
			bad := int32(cfg.Vocab + 5)
			check := func(err error, pos, n int) {
				t.Helper()
				var se *StepError
				if !errors.As(err, &se) || se.Pos != pos || se.Tokens != n || se.Graph != b.cfg.graphPath ||
					errcode.Of(err) != errcode.InferenceFailed || se.Err == nil {
					t.Fatalf("want a StepError at %d of %d tokens with the runtime's cause; got %#v (%v)", pos, n, err, err)
				}
				if b.cached != pos {
					t.Fatalf("%d positions cached after a failed step at %d", b.cached, pos)
				}
				t.Log(err)
			}
			s := stepper{t: t, b: b, o: o, tol: tolerance(cfg)}
			_, err = b.Forward(t.Context(), []int32{1, 2, bad}, 0)
			check(err, 0, 3)
			logits := s.step([]int32{1, 2, 3}, 0)
			_, err = b.Forward(t.Context(), []int32{bad}, 3)
			check(err, 3, 1)
			_, err = b.Forward(t.Context(), []int32{4, bad}, 3)
			check(err, 3, 2)
			for pos := 3; pos < 6; pos++ {
				logits = s.step([]int32{argmaxOf(logits)}, pos)
			}
		})
	}
}
