//go:build cgo

package onnx

import (
	"math"
	"slices"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/onnxgen"
)

// oracleLogSoftmax is the log-softmax of the oracle's logits in float64,
// computed here, independently of the engine's code.
func oracleLogSoftmax(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, x := range logits {
		m = math.Max(m, float64(x))
	}
	sum := 0.0
	for _, x := range logits {
		sum += math.Exp(float64(x) - m)
	}
	out := make([]float64, len(logits))
	for i, x := range logits {
		out[i] = float64(x) - m - math.Log(sum)
	}
	return out
}

// The logprobs a stream reports over the real runtime are the log-softmax
// of the logits the pure-Go oracle computes for the same tokens, at every
// position, under greedy and sampled decoding and with a stop string; the
// alternatives are the oracle's most likely ids.
func TestLogprobsMatchOracle(t *testing.T) {
	const tol = 2e-4 // the runtime's float32 arithmetic against the oracle's
	seed := int64(11)
	reqs := map[string]engine.Request{
		"greedy":  {MaxTokens: 16},
		"sampled": {MaxTokens: 16, Temperature: 1.2, TopP: 0.95, RepetitionPenalty: 1.2, Seed: &seed},
		"stop":    {MaxTokens: 16, Stop: []string{"e"}, Temperature: 1.5, Seed: &seed},
	}
	prompt := enginetest.ByteTokenizer{}.Encode("Logprobs, please.")
	for _, name := range []string{"optimum-fp32", "gqa-fp32"} {
		cfg := byteModel(variants()[name], "")
		dir := modelDir(t, "random-"+name, cfg)
		e := newEngine(t, dir, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
		for rname, req := range reqs {
			t.Run(name+"/"+rname, func(t *testing.T) {
				req.PromptIDs, req.Logprobs, req.TopLogprobs = prompt, true, 5
				s, err := e.Stream(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				o, err := onnxgen.NewOracle(cfg)
				if err != nil {
					t.Fatal(err)
				}
				logits := o.Forward(prompt, 0)
				pos, n := len(prompt), 0
				for s.Next() {
					tok := s.Token()
					want := oracleLogSoftmax(logits)
					if d := math.Abs(float64(tok.Logprob) - want[tok.ID]); d > tol {
						t.Errorf("position %d, id %d: logprob %v, oracle %v", pos, tok.ID, tok.Logprob, want[tok.ID])
					}
					sorted := slices.Sorted(slices.Values(want))
					kth := sorted[len(sorted)-len(tok.TopLogprobs)]
					if len(tok.TopLogprobs) != 5 {
						t.Fatalf("%d alternatives, want 5", len(tok.TopLogprobs))
					}
					for j, alt := range tok.TopLogprobs {
						if d := math.Abs(float64(alt.Logprob) - want[alt.ID]); d > tol || want[alt.ID] < kth-tol {
							t.Errorf("position %d: alternative %d %+v, oracle %v (5th best %v)", pos, j, alt, want[alt.ID], kth)
						}
						if j > 0 && alt.Logprob > tok.TopLogprobs[j-1].Logprob {
							t.Errorf("position %d: alternatives out of order: %v", pos, tok.TopLogprobs)
						}
					}
					logits = o.Forward([]int32{tok.ID}, pos)
					pos++
					n++
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if n == 0 || n != s.Result().Usage.CompletionTokens {
					t.Fatalf("%d tokens, %d counted", n, s.Result().Usage.CompletionTokens)
				}
			})
		}
	}
}

// TestStreamLogprobsAllocs holds a decode step of Engine.Stream over the
// real runtime to no allocation with logprobs off, on, and with the most
// alternatives.
func TestStreamLogprobsAllocs(t *testing.T) {
	dir := modelDir(t, "random-optimum-fp32", byteModel(variants()["optimum-fp32"], ""))
	e := newEngine(t, dir, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	for _, req := range []engine.Request{
		{MaxTokens: 200},
		{MaxTokens: 200, Logprobs: true},
		{MaxTokens: 200, Logprobs: true, TopLogprobs: engine.MaxTopLogprobs},
	} {
		// A random model soon repeats itself, and speculation would verify
		// drafts of it: this is the one-token step's test.
		req.PromptIDs, req.NoSpeculation = []int32{1, 2, 3}, true
		s, err := e.Stream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		// Warm up across the padded hand-over's first block boundary.
		for range padBlock + 5 {
			s.Next()
		}
		if n := testing.AllocsPerRun(40, func() { s.Next() }); n != 0 {
			t.Errorf("logprobs %v, top %d: %v allocations per token", req.Logprobs, req.TopLogprobs, n)
		}
		if !s.Next() {
			t.Fatalf("the stream ended before the measured steps were all decode steps: %+v", s.Result())
		}
		s.Close()
	}
}
