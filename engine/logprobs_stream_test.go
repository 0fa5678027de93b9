package engine_test

import (
	"errors"
	"github.com/prism-local/prism/errcode"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// recording returns a backend with random logits that favour the bytes of
// reply in turn (then EOS), and the logits it returned, by position after
// a prompt of promptLen tokens. The position, not the backend's step,
// counts: a sampled token other than the favoured one is no decode step
// to the scripted backend.
func recording(reply string) (*enginetest.Backend, *[][]float32) {
	const promptLen = 2
	b := enginetest.NewBackend("", 0)
	ids := enginetest.ByteTokenizer{}.Encode(reply)
	var seen [][]float32
	var pcg rand.PCG
	r := rand.New(&pcg)
	b.Logits = func(dst []float32, cache []int32, _ int) {
		step := len(cache) - promptLen
		pcg.Seed(uint64(step), 9)
		for i := range dst {
			dst[i] = float32(r.NormFloat64() * 2)
		}
		next := enginetest.EOS
		if step < len(ids) {
			next = ids[step]
		}
		dst[next] += 12
		seen = append(seen[:step], slices.Clone(dst))
	}
	return b, &seen
}

// logSoftmax64 is the reference: float64, the textbook formula.
func logSoftmax64(l []float32) []float64 {
	m := math.Inf(-1)
	for _, x := range l {
		m = math.Max(m, float64(x))
	}
	sum := 0.0
	for _, x := range l {
		sum += math.Exp(float64(x) - m)
	}
	out := make([]float64, len(l))
	for i, x := range l {
		out[i] = float64(x) - m - math.Log(sum)
	}
	return out
}

// checkLogprobs compares every token's logprobs with the reference over
// the logits the backend returned at its step.
func checkLogprobs(t *testing.T, toks []engine.Token, seen [][]float32, k int) {
	t.Helper()
	if len(toks) != len(seen) {
		t.Fatalf("%d tokens, %d decode steps", len(toks), len(seen))
	}
	for i, tok := range toks {
		want := logSoftmax64(seen[i])
		if d := math.Abs(float64(tok.Logprob) - want[tok.ID]); d > 1e-5 {
			t.Errorf("token %d (id %d): logprob %v, want %v", i, tok.ID, tok.Logprob, want[tok.ID])
		}
		if len(tok.TopLogprobs) != k {
			t.Fatalf("token %d: %d alternatives, want %d", i, len(tok.TopLogprobs), k)
		}
		order := make([]int32, len(want))
		for id := range order {
			order[id] = int32(id)
		}
		slices.SortStableFunc(order, func(a, b int32) int {
			if want[a] != want[b] {
				if want[a] > want[b] {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
		for j, alt := range tok.TopLogprobs {
			if alt.ID != order[j] || math.Abs(float64(alt.Logprob)-want[alt.ID]) > 1e-5 {
				t.Fatalf("token %d: alternative %d is %+v, want id %d logprob %v", i, j, alt, order[j], want[order[j]])
			}
		}
	}
}

// collectTokens runs req and copies every token (TopLogprobs aliases the
// stream's buffer).
func collectTokens(t *testing.T, e *engine.Engine, req engine.Request) ([]engine.Token, string, engine.Result) {
	t.Helper()
	s, err := e.Stream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var toks []engine.Token
	var text strings.Builder
	for s.Next() {
		tok := s.Token()
		tok.Piece = slices.Clone(tok.Piece)
		tok.TopLogprobs = slices.Clone(tok.TopLogprobs)
		toks = append(toks, tok)
		text.Write(tok.Piece)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return toks, text.String(), s.Result()
}

// Every generated token, EOS included, carries the log-softmax of the raw
// logits, whatever the sampling settings, penalties and constraint do to
// the choice.
func TestStreamLogprobsAreTheModelsDistribution(t *testing.T) {
	seed := int64(5)
	cases := []struct {
		name string
		req  engine.Request
	}{
		{"greedy", engine.Request{}},
		{"sampled", engine.Request{Temperature: 1.3, TopP: 0.9, TopK: 40, Seed: &seed}},
		{"penalties", engine.Request{Temperature: 0.7, RepetitionPenalty: 1.4, FrequencyPenalty: 1, PresencePenalty: 1, Seed: &seed}},
		{"constrained", engine.Request{Constraint: lettersThenEnd{min: 3, max: 6}}},
		{"stop string", engine.Request{Stop: []string{"lo w"}}},
	}
	for _, c := range cases {
		for _, k := range []int{0, 1, 20} {
			t.Run(c.name, func(t *testing.T) {
				b, seen := recording("hello world")
				e, _ := enginetest.NewEngineBackend(t, b, quiet())
				req := c.req
				req.Prompt, req.MaxTokens, req.Logprobs, req.TopLogprobs = "go", 40, true, k
				toks, text, res := collectTokens(t, e, req)
				checkLogprobs(t, toks, *seen, k)
				if len(toks) != res.Usage.CompletionTokens {
					t.Errorf("%d tokens yielded, %d counted", len(toks), res.Usage.CompletionTokens)
				}
				var joined strings.Builder
				for _, tok := range toks {
					joined.Write(tok.Piece)
				}
				if joined.String() != text {
					t.Errorf("pieces %q, text %q", joined.String(), text)
				}
				if c.name == "stop string" && (text != "hel" || res.StopString != "lo w" || len(toks) != 7) {
					t.Errorf("stop: %q after %d tokens (%+v)", text, len(toks), res)
				}
			})
		}
	}
}

// Without logprobs a token carries none, and the same request with them
// generates the same tokens.
func TestStreamLogprobsOffAndOnAgree(t *testing.T) {
	b, _ := recording("same tokens")
	e, _ := enginetest.NewEngineBackend(t, b, quiet())
	seed := int64(1)
	req := engine.Request{Prompt: "go", MaxTokens: 30, Temperature: 1, Seed: &seed}
	off, textOff, _ := collectTokens(t, e, req)
	for _, tok := range off {
		if tok.Logprob != 0 || tok.TopLogprobs != nil {
			t.Fatalf("logprobs off, token %+v", tok)
		}
	}
	req.Logprobs, req.TopLogprobs = true, 3
	on, textOn, _ := collectTokens(t, e, req)
	if textOn != textOff || len(on) != len(off) {
		t.Fatalf("logprobs changed the output: %q vs %q", textOn, textOff)
	}
}

func TestTopLogprobsValidated(t *testing.T) {
	e := enginetest.NewEngine(t, "x")
	for _, c := range []struct {
		req  engine.Request
		want string
	}{
		{engine.Request{Prompt: "x", Logprobs: true, TopLogprobs: engine.MaxTopLogprobs + 1}, "between 0 and 20"},
		{engine.Request{Prompt: "x", Logprobs: true, TopLogprobs: -1}, "between 0 and 20"},
		{engine.Request{Prompt: "x", TopLogprobs: 2}, "needs logprobs"},
	} {
		_, err := e.Stream(t.Context(), c.req)
		var ie *engine.InvalidRequestError
		if !errors.As(err, &ie) || ie.Param != "top_logprobs" || errcode.Of(err) != engine.CodeInvalidRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.req, err)
		}
	}
	if _, _, err := e.Generate(t.Context(), engine.Request{Prompt: "x", Logprobs: true, TopLogprobs: 20}); err != nil {
		t.Errorf("top_logprobs 20: %v", err)
	}
}
