package grammar_test

import (
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
)

// realTokenizer adapts engine/tokenizer to engine.Tokenizer.
type realTokenizer struct{ *tokenizer.Tokenizer }

func (t realTokenizer) NewStreamDecoder(skipSpecial bool) engine.StreamDecoder {
	return t.NewDecoder(skipSpecial)
}

// TestEngineOutputsValidate generates through engine.Engine, with a real
// tokenizer and a fake backend whose logits are noise, and checks the
// streamed text against the independent validator: greedy and sampled,
// byte-level and sentencepiece vocabularies.
func TestEngineOutputsValidate(t *testing.T) {
	all := corpus(t)
	names := []string{"openai_weather", "openai_linked_list", "openai_ui_recursive", "formats", "numbers", "unicode_keys", "strings_lengths"}
	for _, fam := range []string{"qwen3", "llama2"} {
		t.Run(fam, func(t *testing.T) {
			tok, v := family(t, fam)
			b := enginetest.NewBackend("", 8192)
			b.ModelInfo.VocabSize = tok.VocabSize()
			b.ModelInfo.EOS = tok.EOS()
			var pcg rand.PCG
			r := rand.New(&pcg)
			b.Logits = func(dst []float32, cache []int32, step int) {
				pcg.Seed(uint64(step), uint64(len(cache)))
				for i := range dst {
					dst[i] = float32(r.NormFloat64() * 4)
				}
			}
			e2, err := engine.New(b, realTokenizer{tok}, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e2.Close() })
			complete := 0
			t.Cleanup(func() { t.Logf("%d complete values validated", complete) })
			for _, name := range names {
				g, err := grammarFor(v, all[name])
				if err != nil {
					t.Fatal(err)
				}
				s := validator(t, name, all[name])
				for seed := range int64(2) {
					for _, temp := range []float64{0, 1} {
						req := engine.Request{Prompt: "Answer in JSON.", MaxTokens: 600, Temperature: temp, Seed: &seed, Constraint: g}
						text, res, err := e2.Generate(t.Context(), req)
						if err != nil {
							t.Fatal(err)
						}
						if res.FinishReason != engine.FinishStop || res.StopString != "" {
							continue // cut by max_tokens: the value is incomplete, as the finish reason says
						}
						checkValid(t, s, text)
						complete++
					}
				}
			}
		})
	}
}

func grammarFor(v *grammar.Vocabulary, schema []byte) (*grammar.Grammar, error) {
	return grammar.CompileSchema(v, schema, grammar.Options{Strict: true})
}

func quietLog() engine.Option { return engine.WithLogger(slog.New(slog.DiscardHandler)) }
