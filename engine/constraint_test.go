package engine_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// lettersThenEnd allows only the lowercase letters, min to max of them, and
// may end after min: a constraint with no JSON in it, to prove the hook.
type lettersThenEnd struct{ min, max int }

func (c lettersThenEnd) VocabSize() int             { return enginetest.ByteVocab }
func (c lettersThenEnd) NewMatcher() engine.Matcher { return &letterMatcher{c: c} }

type letterMatcher struct {
	c lettersThenEnd
	n int
}

func (m *letterMatcher) Mask(allowed []uint64) bool {
	if m.n < m.c.max {
		for id := 'a'; id <= 'z'; id++ {
			allowed[id>>6] |= 1 << (id & 63)
		}
	}
	return m.n >= m.c.min
}

func (m *letterMatcher) Advance(id int32) bool {
	if id < 'a' || id > 'z' || m.n >= m.c.max {
		return false
	}
	m.n++
	return true
}

// noisy returns a backend whose logits are random (seeded per step), with
// the EOS id and a few non-letters strongly favoured.
func noisy() *enginetest.Backend {
	b := enginetest.NewBackend("", 0)
	var pcg rand.PCG
	r := rand.New(&pcg)
	b.Logits = func(dst []float32, _ []int32, step int) {
		pcg.Seed(uint64(step), 1)
		for i := range dst {
			dst[i] = float32(r.NormFloat64() * 3)
		}
		dst[enginetest.EOS] = 20
		dst['{'] = 25
		dst['7'] = float32(math.Inf(1))
	}
	return b
}

func TestConstraintMasksEveryStep(t *testing.T) {
	seed := int64(3)
	cases := []struct {
		name string
		req  engine.Request
	}{
		{"greedy", engine.Request{}},
		{"sampled", engine.Request{Temperature: 1, TopP: 0.95, TopK: 50, Seed: &seed}},
		{"penalties", engine.Request{Temperature: 0.8, RepetitionPenalty: 1.3, FrequencyPenalty: 1, PresencePenalty: 0.5, Seed: &seed}},
		{"min_p", engine.Request{Temperature: 1.5, MinP: 0.05, Seed: &seed}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := enginetest.NewEngineBackend(t, noisy(), quiet())
			req := c.req
			req.Prompt, req.MaxTokens, req.Constraint = "go", 100, lettersThenEnd{min: 5, max: 12}
			text, res, err := e.Generate(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(text) < 5 || len(text) > 12 || res.FinishReason != engine.FinishStop {
				t.Fatalf("text %q, finish %q; want 5 to 12 letters then EOS", text, res.FinishReason)
			}
			for _, r := range text {
				if r < 'a' || r > 'z' {
					t.Fatalf("text %q has %q, outside the mask", text, r)
				}
			}
			again, _, err := e.Generate(t.Context(), req)
			if err != nil || (req.Temperature > 0 && again != text) {
				t.Errorf("same seed gave %q then %q (%v)", text, again, err)
			}
		})
	}
}

func TestConstraintWithStopAndMaxTokens(t *testing.T) {
	e, _ := enginetest.NewEngineBackend(t, noisy(), quiet())
	text, res, err := e.Generate(t.Context(), engine.Request{Prompt: "go", MaxTokens: 3, Constraint: lettersThenEnd{min: 5, max: 12}})
	if err != nil || len(text) != 3 || res.FinishReason != engine.FinishLength {
		t.Errorf("max_tokens 3: %q, %q, %v; want 3 letters cut by length", text, res.FinishReason, err)
	}
}

type deadEnd struct{}

func (deadEnd) VocabSize() int             { return 10 }
func (deadEnd) NewMatcher() engine.Matcher { return deadEnd{} }
func (deadEnd) Mask([]uint64) bool         { return false }
func (deadEnd) Advance(int32) bool         { return false }

type tooBig struct{ deadEnd }

func (tooBig) VocabSize() int { return 1 << 20 }

type empty struct{ deadEnd }

func (empty) VocabSize() int { return 0 }

func TestConstraintErrors(t *testing.T) {
	e, _ := enginetest.NewEngineBackend(t, noisy(), quiet())
	_, _, err := e.Generate(t.Context(), engine.Request{Prompt: "go", Constraint: deadEnd{}})
	if err == nil {
		t.Error("a matcher that allows nothing did not fail the stream")
	}
	for _, c := range []engine.Constraint{tooBig{}, empty{}} {
		_, err := e.Stream(context.Background(), engine.Request{Prompt: "go", Constraint: c})
		var inv *engine.InvalidRequestError
		if !errors.As(err, &inv) || inv.Param != "response_format" {
			t.Errorf("%T: got %v, want invalid response_format", c, err)
		}
	}
}

func TestConstraintNoAllocPerToken(t *testing.T) {
	b := noisy()
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	seed := int64(1)
	for _, req := range []engine.Request{
		{Prompt: "x", MaxTokens: 5000, Constraint: lettersThenEnd{min: 5000, max: 5000}},
		{Prompt: "x", MaxTokens: 5000, Temperature: 0.7, TopK: 20, Seed: &seed, Constraint: lettersThenEnd{min: 5000, max: 5000}},
	} {
		s, err := e.Stream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			s.Next()
		}
		if n := testing.AllocsPerRun(30, func() { s.Next() }); n != 0 {
			t.Errorf("%v allocations per constrained token", n)
		}
		s.Close()
	}
}
