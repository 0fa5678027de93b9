package engine_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// copier returns a backend whose model copies: the next token is the one
// that followed the newest earlier occurrence of the last two tokens (an
// induction head), else a token derived from the last one; every logit
// gets a little context-dependent noise, so sampling has a real
// distribution to follow. After stopAt decode steps it predicts EOS.
func copier(stopAt int) *enginetest.Backend {
	b := enginetest.NewBackend("", 0)
	b.Logits = func(dst []float32, cache []int32, step int) {
		n := len(cache)
		last := cache[n-1]
		next := int32('a' + (last*7+3)%26)
		if n >= 2 {
			for j := n - 2; j >= 1; j-- {
				if cache[j-1] == cache[n-2] && cache[j] == last {
					next = cache[j+1]
					break
				}
			}
		}
		h := uint32(last)*2654435761 + uint32(n)
		for i := range dst {
			h = h*1664525 + 1013904223
			dst[i] = float32(h>>24) / 256 // [0, 1)
		}
		dst[next] += 4
		if step >= stopAt {
			dst[enginetest.EOS] = 30
		}
	}
	return b
}

const copyPrompt = "Rewrite: the quick brown fox jumps over the lazy dog, and the lazy dog sleeps on. Answer: the quick"

type specRun struct {
	ids  []int32
	lps  []float32
	text string
	res  engine.Result
}

func runSpec(t *testing.T, e *engine.Engine, req engine.Request) specRun {
	t.Helper()
	s, err := e.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var r specRun
	var text []byte
	for s.Next() {
		tok := s.Token()
		r.ids = append(r.ids, tok.ID)
		r.lps = append(r.lps, tok.Logprob)
		for _, a := range tok.TopLogprobs {
			r.lps = append(r.lps, float32(a.ID), a.Logprob)
		}
		text = append(text, tok.Piece...)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	r.text, r.res = string(text), s.Result()
	return r
}

// TestSpeculationSameTokens: every request feature gives the same tokens,
// text, logprobs and finish with speculation as without, and speculation
// accepts drafts on a model that copies.
func TestSpeculationSameTokens(t *testing.T) {
	seed := int64(7)
	cases := []struct {
		name string
		req  engine.Request
	}{
		{"greedy", engine.Request{}},
		{"max tokens", engine.Request{MaxTokens: 9}},
		{"logprobs", engine.Request{Logprobs: true, TopLogprobs: 3}},
		{"stop string", engine.Request{Stop: []string{"\x00never", "on. Answer: the q"}}},
		{"penalties", engine.Request{RepetitionPenalty: 1.05, FrequencyPenalty: 0.1, PresencePenalty: 0.1}},
		{"constraint", engine.Request{Constraint: lettersThenEnd{min: 5, max: 30}}},
		{"sampled", engine.Request{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: &seed}},
		{"sampled with penalties and logprobs", engine.Request{Temperature: 1, Seed: &seed, RepetitionPenalty: 1.1, Logprobs: true, TopLogprobs: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, be := enginetest.NewEngineBackend(t, copier(70), quiet())
			if e.Info().Speculation != engine.SpeculationPromptLookup {
				t.Fatalf("speculation %q (%s), want on", e.Info().Speculation, e.Info().SpeculationReason)
			}
			req := c.req
			req.Prompt = copyPrompt
			spec := runSpec(t, e, req)
			req.NoSpeculation = true
			plain := runSpec(t, e, req)
			if !slices.Equal(spec.ids, plain.ids) || spec.text != plain.text || !slices.Equal(spec.lps, plain.lps) {
				t.Errorf("speculative %q\n         plain %q", spec.text, plain.text)
			}
			sr, pr := spec.res, plain.res
			if sr.FinishReason != pr.FinishReason || sr.StopString != pr.StopString || sr.Usage.CompletionTokens != pr.Usage.CompletionTokens || sr.LoopGuard != pr.LoopGuard {
				t.Errorf("speculative result %+v, plain %+v", sr, pr)
			}
			if pr.Speculation != (engine.SpeculationStats{}) {
				t.Errorf("NoSpeculation still speculated: %+v", pr.Speculation)
			}
			st := sr.Speculation
			if c.req.Stop != nil && sr.StopString != "on. Answer: the q" {
				t.Errorf("stop string %q, want the one in the copied text", sr.StopString)
			}
			if st.Accepted > st.Drafted || st.Steps == 0 || st.Accepted == 0 && c.req.Constraint == nil && c.req.Temperature < 1 {
				t.Errorf("speculation stats %+v: want drafts accepted on a copying model", st)
			}
			if be.Stats().Verifies == 0 {
				t.Error("no verify step ran")
			}
			t.Logf("%d tokens, %+v: %q", len(spec.ids), st, spec.text)
		})
	}
}

// TestSpeculationLoopGuard: the loop guard fires on the same token with
// speculation as without, drafts being what a loop is made of.
func TestSpeculationLoopGuard(t *testing.T) {
	run := func(off bool) engine.Result {
		e, _ := enginetest.NewEngineBackend(t, cycling("I am stuck. "), quiet())
		_, res, err := e.Generate(context.Background(), engine.Request{Prompt: "go", MaxTokens: 300, NoSpeculation: off})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	spec, plain := run(false), run(true)
	if !spec.LoopGuard || spec.Usage != plain.Usage || spec.FinishReason != plain.FinishReason {
		t.Errorf("speculative %+v, plain %+v", spec, plain)
	}
	if spec.Speculation.Accepted == 0 {
		t.Errorf("a loop accepted no draft: %+v", spec.Speculation)
	}
}

// TestSpeculationOff: the engine option and a backend without a proof
// turn speculation off, with the reason in ModelInfo.
func TestSpeculationOff(t *testing.T) {
	e, be := enginetest.NewEngineBackend(t, copier(40), quiet(), engine.WithSpeculation(false))
	if info := e.Info(); info.Speculation != engine.SpeculationOff || info.SpeculationReason == "" {
		t.Errorf("WithSpeculation(false): %q %q", info.Speculation, info.SpeculationReason)
	}
	_, res, err := e.Generate(context.Background(), engine.Request{Prompt: copyPrompt})
	if err != nil || res.Speculation != (engine.SpeculationStats{}) || be.Stats().Verifies != 0 {
		t.Errorf("off: %+v, %d verifies, %v", res.Speculation, be.Stats().Verifies, err)
	}

	unproven := copier(40)
	unproven.ModelInfo.Speculation, unproven.ModelInfo.SpeculationReason = engine.SpeculationOff, "the proof failed"
	e, _ = enginetest.NewEngineBackend(t, unproven, quiet())
	if info := e.Info(); info.Speculation != engine.SpeculationOff || info.SpeculationReason != "the proof failed" {
		t.Errorf("unproven backend: %q %q", info.Speculation, info.SpeculationReason)
	}
}

// TestSpeculationSampling: with sampling, a token drafted at a position
// is accepted with the probability the model gives it, and the tokens
// follow the model's distribution, measured over many seeds against the
// exact probabilities (a chi-square test), and each seed gives the tokens
// plain sampling gives.
func TestSpeculationSampling(t *testing.T) {
	// The model: after the prompt "abcab" it says 'c', then copies with
	// probability 0.6 ('a', drafted from the prompt's "bc" → "a") and
	// otherwise picks 'x' (0.3) or 'y' (0.1); then EOS.
	probs := map[int32]float64{'a': 0.6, 'x': 0.3, 'y': 0.1}
	b := enginetest.NewBackend("", 0)
	b.Logits = func(dst []float32, _ []int32, step int) {
		for i := range dst {
			dst[i] = float32(math.Inf(-1))
		}
		switch step {
		case 0:
			dst['c'] = 0
		case 1:
			for id, p := range probs {
				dst[id] = float32(math.Log(p))
			}
		default:
			dst[enginetest.EOS] = 0
		}
	}
	n := 3000
	if testing.Short() {
		n = 600
	}
	counts := map[int32]int{}
	var drafted, accepted int
	for i := range n {
		seed := int64(i)
		// A fresh engine each time: one that has measured its steps may
		// find a draft not worth its step (the fake's rows cost as much as
		// a step), and this test is about the draft's acceptance.
		e, _ := enginetest.NewEngineBackend(t, b, quiet())
		req := engine.Request{Prompt: "abcab", Temperature: 1, Seed: &seed, MaxTokens: 3}
		spec := runSpec(t, e, req)
		req.NoSpeculation = true
		plain := runSpec(t, e, req)
		if !slices.Equal(spec.ids, plain.ids) {
			t.Fatalf("seed %d: speculative %v, plain %v", i, spec.ids, plain.ids)
		}
		counts[spec.ids[1]]++
		drafted += spec.res.Speculation.Drafted
		accepted += spec.res.Speculation.Accepted
	}
	chi := 0.0
	for id, p := range probs {
		want := p * float64(n)
		d := float64(counts[id]) - want
		chi += d * d / want
	}
	// Two degrees of freedom: P(chi² > 13.8) = 0.001.
	if chi > 13.8 || len(counts) != len(probs) {
		t.Errorf("first tokens %v over %d seeds: chi² %.2f", counts, n, chi)
	}
	if drafted != n {
		t.Fatalf("%d tokens drafted over %d streams, want one each", drafted, n)
	}
	rate := float64(accepted) / float64(drafted)
	if se := math.Sqrt(0.6 * 0.4 / float64(n)); math.Abs(rate-0.6) > 4*se {
		t.Errorf("acceptance rate %.3f, want 0.6 ± %.3f", rate, 4*se)
	}
}

// TestSpeculationFreeText: on text with nothing to copy nothing is
// drafted, and a model that never agrees with its drafts is drafted for
// rarely.
func TestSpeculationFreeText(t *testing.T) {
	// Always the next letter: no bigram repeats within 26 tokens.
	b := enginetest.NewBackend("", 0)
	b.Logits = func(dst []float32, cache []int32, step int) {
		clear(dst)
		dst['a'+(int32(step)+cache[len(cache)-1])%26] = 30
	}
	e, _ := enginetest.NewEngineBackend(t, b, quiet())
	_, res, err := e.Generate(context.Background(), engine.Request{Prompt: "q", MaxTokens: 20})
	if err != nil || res.Speculation.Drafted != 0 {
		t.Errorf("nothing to copy: %+v, %v", res.Speculation, err)
	}

	// A model that repeats a bigram but never continues it as before
	// ("a b c a b d a b e ..."): every draft is rejected at its first
	// token, and drafting backs off.
	b = enginetest.NewBackend("", 0)
	b.Logits = func(dst []float32, cache []int32, step int) {
		clear(dst)
		switch step % 3 {
		case 0, 1:
			dst["ab"[step%3]] = 30
		default:
			dst['c'+(step/3)%24] = 30
		}
	}
	e, _ = enginetest.NewEngineBackend(t, b, quiet())
	_, res, err = e.Generate(context.Background(), engine.Request{Prompt: "z", MaxTokens: 70})
	if err != nil {
		t.Fatal(err)
	}
	st := res.Speculation
	if st.Accepted != 0 || st.Steps > 8 {
		t.Errorf("%+v over 70 tokens: drafting did not back off", st)
	}
	t.Logf("%+v", st)
}
