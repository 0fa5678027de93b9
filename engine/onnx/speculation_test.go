//go:build cgo

package onnx

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/onnxgen"
)

// The speculation proof at load: on where the graph proves a verify step
// and the roll-back, off with the reason where it cannot, said in
// ModelInfo and the load log.
func TestSpeculationProof(t *testing.T) {
	cases := []struct {
		name   string
		cfg    onnxgen.Config
		on     bool
		reason string
	}{
		{"optimum-fp32", variants()["optimum-fp32"], true, "proven on this graph"},
		{"gqa-fp16", variants()["gqa-fp16"], true, "proven on this graph"},
		{"genai-fp32", variants()["genai-fp32"], true, "proven on this graph"},
		{"optimum-logits-to-keep", variants()["optimum-logits-to-keep"], true, "proven on this graph"},
		{"genai-combined-past", variants()["genai-combined-past"], true, "proven on this graph"},
		{"optimum-merged-fp16", variants()["optimum-merged-fp16"], true, "proven on this graph"},
		{"optimum-q4f16", variants()["optimum-q4f16"], true, "proven on this graph"},
		{"optimum-hybrid-conv", variants()["optimum-hybrid-conv"], false, "hybrid decoder"},
		{"genai-mask-square", squareMask(onnxgen.LayoutGenAI), false, "no multi-token step on a past"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log strings.Builder
			b := openModel(t, modelDir(t, "random-"+c.name, c.cfg), Options{Logger: logTo(&log)})
			info := b.Info()
			want := engine.SpeculationOff
			if c.on {
				want = engine.SpeculationPromptLookup
			}
			if info.Speculation != want || !strings.Contains(info.SpeculationReason, c.reason) {
				t.Fatalf("speculation %q (%s), want %q with %q", info.Speculation, info.SpeculationReason, want, c.reason)
			}
			if !strings.Contains(log.String(), "speculation="+want) {
				t.Errorf("load log lacks speculation=%s:\n%s", want, log.String())
			}
			e := newEngineOn(t, b)
			if got := e.Info().Speculation; got != want {
				t.Errorf("engine reports %q, backend %q", got, want)
			}
			if !c.on {
				if _, err := b.Verify(context.Background(), []int32{1, 2}, 0); err == nil {
					t.Error("Verify ran on a graph whose proof failed")
				}
			}
		})
	}
}

// A verify step that gives a row apart from the one-token steps' turns
// speculation off with the reason: the proof's comparison, fed a row
// made wrong.
func TestSpeculationProofCatchesWrongRows(t *testing.T) {
	b := openModel(t, modelDir(t, "random-optimum-fp32", variants()["optimum-fp32"]), Options{})
	b.stepRef = [][]float32{nil, make([]float32, b.io.vocab), make([]float32, b.io.vocab)}
	for i := range b.stepRef[1] {
		b.stepRef[1][i] = float32(i % 7) // not the model's logits
		b.stepRef[2][i] = float32(i % 5)
	}
	b.info.Prefill = engine.PrefillChunked
	if err := b.proveSpeculation(context.Background(), b.info.KVCache); err != nil {
		t.Fatal(err)
	}
	if b.info.Speculation != engine.SpeculationOff || !strings.Contains(b.info.SpeculationReason, "row 1 of a 3-token verify step") {
		t.Fatalf("speculation %q (%s), want off naming row 1", b.info.Speculation, b.info.SpeculationReason)
	}
}

const (
	rewritePrompt = "Please rewrite: the quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun.\nRewritten: "
	rewriteAnswer = "the quick brown fox leaps over the lazy dog while the cat sleeps in the hot sun."
)

// letters allows lowercase letters and spaces, and may end after min of
// them: a constraint on the real runtime's logits.
type letters struct{ min int }

func (c letters) VocabSize() int             { return enginetest.ByteVocab }
func (c letters) NewMatcher() engine.Matcher { return &letterState{min: c.min} }

type letterState struct{ min, n int }

func (m *letterState) Mask(allowed []uint64) bool {
	for _, id := range "abcdefghijklmnopqrstuvwxyz " {
		allowed[id>>6] |= 1 << (id & 63)
	}
	return m.n >= m.min
}

func (m *letterState) Advance(id int32) bool {
	if (id < 'a' || id > 'z') && id != ' ' {
		return false
	}
	m.n++
	return true
}

// Greedy decoding gives the same tokens with speculation as without, on
// real graphs of both layouts and every cache strategy, with stop strings,
// logprobs, a constraint and penalties, and speculation accepts drafts on a
// model whose answer copies its prompt.
func TestSpeculationMatchesPlain(t *testing.T) {
	names := []string{"optimum-fp32", "gqa-fp16", "genai-fp32", "optimum-logits-to-keep", "genai-combined-past", "optimum-mask-positions", "optimum-int4"}
	if testing.Short() {
		names = names[:3]
	}
	reqs := []struct {
		name string
		req  engine.Request
	}{
		{"greedy", engine.Request{}},
		{"logprobs", engine.Request{Logprobs: true, TopLogprobs: 3}},
		{"stop string", engine.Request{Stop: []string{"lazy dog w"}}},
		{"constraint", engine.Request{Constraint: letters{min: 3}, MaxTokens: 40}},
		{"penalties", engine.Request{RepetitionPenalty: 1.1, PresencePenalty: 0.2}},
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dir := modelDir(t, "rewrite-"+name, byteModel(variants()[name], rewriteAnswer))
			for _, rc := range reqs {
				// A fresh engine for each request: one that has measured
				// its steps may find drafts not worth a step on a model
				// this small, and the test is about the drafts.
				e := newEngine(t, dir)
				if e.Info().Speculation != engine.SpeculationPromptLookup {
					t.Fatalf("speculation %q: %s", e.Info().Speculation, e.Info().SpeculationReason)
				}
				req := rc.req
				req.Prompt = rewritePrompt
				spec := collectAll(t, e, req)
				req.NoSpeculation = true
				plain := collectAll(t, e, req)
				if !slices.Equal(spec.ids, plain.ids) || spec.res.FinishReason != plain.res.FinishReason || spec.res.StopString != plain.res.StopString {
					t.Errorf("%s: speculative %q (%s), plain %q (%s)", rc.name, spec.text, spec.res.FinishReason, plain.text, plain.res.FinishReason)
					continue
				}
				for i := range spec.lps {
					if d := math.Abs(float64(spec.lps[i] - plain.lps[i])); d > 1e-3 {
						t.Errorf("%s: logprob %d: %v speculative, %v plain", rc.name, i, spec.lps[i], plain.lps[i])
						break
					}
				}
				st := spec.res.Speculation
				if rc.req.Constraint == nil && (st.Accepted == 0 || st.Accepted > st.Drafted) {
					t.Errorf("%s: %+v, want drafts of the copied prompt accepted", rc.name, st)
				}
				if rc.name == "greedy" && spec.text != rewriteAnswer {
					t.Errorf("answer %q, want the script %q", spec.text, rewriteAnswer)
				}
				t.Logf("%s: %d tokens, %+v", rc.name, len(spec.ids), st)
			}
		})
	}
}

// Random weights: free text with whatever the model repeats, the same
// tokens with speculation as without (float32 graphs, where the steps'
// rounding differs by about 1e-7 and cannot flip an argmax the tests meet).
func TestSpeculationRandomModelMatchesPlain(t *testing.T) {
	for _, name := range []string{"optimum-fp32", "gqa-fp32", "genai-fp32"} {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, modelDir(t, "random-"+name, byteModel(variants()[name], "")), engine.WithLoopGuard(engine.LoopGuard{Off: true}))
			req := engine.Request{Prompt: rewritePrompt, MaxTokens: 100}
			spec := collectAll(t, e, req)
			req.NoSpeculation = true
			plain := collectAll(t, e, req)
			if !slices.Equal(spec.ids, plain.ids) {
				t.Errorf("speculative %v\n plain %v", spec.ids, plain.ids)
			}
			t.Logf("%+v", spec.res.Speculation)
		})
	}
}

type collected struct {
	ids  []int32
	lps  []float32
	text string
	res  engine.Result
}

func collectAll(t *testing.T, e *engine.Engine, req engine.Request) collected {
	t.Helper()
	s, err := e.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var c collected
	var text strings.Builder
	for s.Next() {
		tok := s.Token()
		c.ids = append(c.ids, tok.ID)
		c.lps = append(c.lps, tok.Logprob)
		for _, a := range tok.TopLogprobs {
			c.lps = append(c.lps, a.Logprob)
		}
		text.Write(tok.Piece)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	c.text, c.res = text.String(), s.Result()
	return c
}
