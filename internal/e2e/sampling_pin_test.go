//go:build cgo

package e2e

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// sampledPins are the token ids (as a count and an FNV-1a hash of their
// little-endian bytes) that the tiny random-weight model with the Qwen3
// tokenizer generates for a few seeds, free, in JSON mode and under a
// recursive schema, with the sampling settings of each case. They were
// recorded with the straightforward sampler (every logit weighed and
// drawn in id order); the faster paths must pick exactly the same tokens,
// so a change here is a change of answers, not of speed. The logits come
// from ONNX Runtime's CPU kernels, so a new runtime version may move them:
// then empty the map, and the test prints the values to pin, after
// engine's TestSamplerMatchesReference (which needs no runtime) has shown
// the sampler unchanged. The schema cases were pinned again when object
// members became free to come in any order (the grammar admits more
// tokens, so the draws differ), with the free and JSON-mode pins, which the
// change could not move, still matching.
var sampledPins = map[string]string{
	"free/greedy_penalties/seed1":         "96 a8ad7387b1853ca7 [13 13 13]",
	"free/greedy_penalties/seed2":         "96 a8ad7387b1853ca7 [13 13 13]",
	"free/greedy_penalties/seed3":         "96 a8ad7387b1853ca7 [13 13 13]",
	"free/minp0.05/seed1":                 "96 500ca5f3e58e1225 [13 13 13]",
	"free/minp0.05/seed2":                 "96 500ca5f3e58e1225 [13 13 13]",
	"free/minp0.05/seed3":                 "96 500ca5f3e58e1225 [13 13 13]",
	"free/t0.8/seed1":                     "96 500ca5f3e58e1225 [13 13 13]",
	"free/t0.8/seed2":                     "96 500ca5f3e58e1225 [13 13 13]",
	"free/t0.8/seed3":                     "96 500ca5f3e58e1225 [13 13 13]",
	"free/topk40_topp0.95/seed1":          "96 500ca5f3e58e1225 [13 13 13]",
	"free/topk40_topp0.95/seed2":          "96 500ca5f3e58e1225 [13 13 13]",
	"free/topk40_topp0.95/seed3":          "96 500ca5f3e58e1225 [13 13 13]",
	"free/topp0.9_penalties/seed1":        "96 bf033f80e0daf4ef [13 51169 51169]",
	"free/topp0.9_penalties/seed2":        "96 c0e602a9630f7ef0 [13 13 13]",
	"free/topp0.9_penalties/seed3":        "96 a046cf9d38a38fa7 [13 29033 29033]",
	"json_object/greedy_penalties/seed1":  "96 929212a867c2a0b7 [7018 7018 7018]",
	"json_object/greedy_penalties/seed2":  "96 929212a867c2a0b7 [7018 7018 7018]",
	"json_object/greedy_penalties/seed3":  "96 929212a867c2a0b7 [7018 7018 7018]",
	"json_object/minp0.05/seed1":          "96 16f6442df96a14d7 [7018 7018 7018]",
	"json_object/minp0.05/seed2":          "96 04c3cf2fa3578002 [57041 57041 22207]",
	"json_object/minp0.05/seed3":          "96 a7f7e7e1ab725dcb [9103 9103 9103]",
	"json_object/t0.8/seed1":              "96 929212a867c2a0b7 [7018 7018 7018]",
	"json_object/t0.8/seed2":              "22 197623b7d7dd9285 [34513 4913 4913]",
	"json_object/t0.8/seed3":              "96 5155402acc85c4a3 [7018 7018 7018]",
	"json_object/topk40_topp0.95/seed1":   "96 fb34e86fddf978a3 [7018 7018 7018]",
	"json_object/topk40_topp0.95/seed2":   "96 bfe02d0ac1a3c70b [57041 57041 22207]",
	"json_object/topk40_topp0.95/seed3":   "96 018f60b891bc2ca3 [7018 7018 7018]",
	"json_object/topp0.9_penalties/seed1": "96 46ee631282425533 [7018 7018 7018]",
	"json_object/topp0.9_penalties/seed2": "96 f9a086606d19a375 [57041 57041 22207]",
	"json_object/topp0.9_penalties/seed3": "96 4e74014e2e06bc6a [7018 7018 7018]",
	"schema/greedy_penalties/seed1":       "96 6990dbf7ecaccc4d [7018 7018 7018]",
	"schema/greedy_penalties/seed2":       "96 6990dbf7ecaccc4d [7018 7018 7018]",
	"schema/greedy_penalties/seed3":       "96 6990dbf7ecaccc4d [7018 7018 7018]",
	"schema/minp0.05/seed1":               "96 93b201d8bdd25f4e [7018 7018 7018]",
	"schema/minp0.05/seed2":               "96 79ce16f969f4270f [57041 57041 22207]",
	"schema/minp0.05/seed3":               "96 b47ce9a72f04a495 [9103 9103 9103]",
	"schema/t0.8/seed1":                   "96 d58ff6718c065a5b [7018 7018 7018]",
	"schema/t0.8/seed2":                   "96 0c52f6fe5e1a7b04 [35557 7018 7018]",
	"schema/t0.8/seed3":                   "96 21d713a409078baa [7018 7018 7018]",
	"schema/topk40_topp0.95/seed1":        "96 78f63852e87314b3 [7018 7018 7018]",
	"schema/topk40_topp0.95/seed2":        "96 26ee8ddf46589c81 [57041 57041 22207]",
	"schema/topk40_topp0.95/seed3":        "96 21d713a409078baa [7018 7018 7018]",
	"schema/topp0.9_penalties/seed1":      "96 8fc6957f0e46d7e5 [7018 7018 7018]",
	"schema/topp0.9_penalties/seed2":      "96 258f5a6b43c67fd4 [57041 57041 22207]",
	"schema/topp0.9_penalties/seed3":      "96 5af1e30dc16dabdf [7018 7018 7018]",
}

func TestSampledTokensArePinned(t *testing.T) {
	tokDir := fixtures.TokenizerDir(t, "qwen3")
	cfg := onnxgen.Tiny()
	cfg.Context = 1024
	cfg.TokenizerDir = tokDir
	cfg.Vocab = 0
	dir := filepath.Join(t.TempDir(), "model")
	if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	// The loop guard is off so that the random model's repetitive output
	// runs its full length.
	eng, vocab := openConstrained(t, dir, prism.WithEngineOptions(engine.WithLoopGuard(engine.LoopGuard{Off: true})))
	jsonMode, err := grammar.JSONObject(vocab, grammar.Options{})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := grammar.CompileSchema(vocab, readSchema(t, "openai_ui_recursive"), grammar.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	settings := []struct {
		name string
		req  engine.Request
	}{
		{"t0.8", engine.Request{Temperature: 0.8}},
		{"topk40_topp0.95", engine.Request{Temperature: 1, TopK: 40, TopP: 0.95}},
		{"topp0.9_penalties", engine.Request{Temperature: 1.2, TopP: 0.9, RepetitionPenalty: 1.1, FrequencyPenalty: 0.3, PresencePenalty: 0.2}},
		{"minp0.05", engine.Request{Temperature: 1.5, MinP: 0.05}},
		{"greedy_penalties", engine.Request{RepetitionPenalty: 1.3}},
	}
	got := map[string]string{}
	for _, c := range []struct {
		name string
		c    engine.Constraint
	}{{"free", nil}, {"json_object", jsonMode}, {"schema", schema}} {
		for _, st := range settings {
			for seed := int64(1); seed <= 3; seed++ {
				if raceEnabled && (seed > 1 || st.name != "t0.8" && st.name != "topk40_topp0.95") {
					continue
				}
				name := fmt.Sprintf("%s/%s/seed%d", c.name, st.name, seed)
				req := st.req
				req.Prompt, req.MaxTokens, req.Seed, req.Constraint = "Reply.", 96, &seed, c.c
				got[name] = pinOf(t, eng, req)
			}
		}
	}
	if len(sampledPins) == 0 {
		for name, v := range got {
			t.Logf("%q: %q,", name, v)
		}
		t.Fatal("no pins recorded")
	}
	for name, v := range got {
		if want, ok := sampledPins[name]; !ok {
			t.Errorf("%s: no pin", name)
		} else if v != want {
			t.Errorf("%s: tokens %s, pinned %s", name, v, want)
		}
	}
	if !raceEnabled && len(got) != len(sampledPins) {
		t.Errorf("%d runs, %d pins", len(got), len(sampledPins))
	}
}

// pinOf generates req and summarises the ids it produced.
func pinOf(t *testing.T, eng *engine.Engine, req engine.Request) string {
	t.Helper()
	s, err := eng.Stream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	n := 0
	var first []int32
	for s.Next() {
		id := s.Token().ID
		_, _ = h.Write([]byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)})
		if n < 3 {
			first = append(first, id)
		}
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d %016x %v", n, h.Sum64(), first)
}
