package grammar_test

import (
	"log/slog"
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

// noise fills logits with uniform noise in [-8, 8) that depends on the
// position: cheap enough for a 150k vocabulary under the race detector.
func noise(dst []float32, cache []int32, step int) {
	x := uint64(len(cache))*0x9e3779b97f4a7c15 + uint64(step) + 1
	for i := range dst {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		dst[i] = float32(int32(x>>32)) / (1 << 28)
	}
}

// TestEngineOutputsValidate generates through engine.Engine, with a real
// tokenizer and a fake backend whose logits are noise, and checks the
// streamed text against the independent validator: greedy and sampled,
// byte-level and sentencepiece vocabularies.
func TestEngineOutputsValidate(t *testing.T) {
	all := corpus(t)
	names := []string{"openai_weather", "openai_linked_list", "openai_ui_recursive", "formats", "numbers", "unicode_keys", "strings_lengths"}
	seeds := int64(2)
	if testing.Short() || raceEnabled {
		names, seeds = names[:2], 1
	}
	for _, fam := range []string{"qwen3", "llama2"} {
		t.Run(fam, func(t *testing.T) {
			tok, v := family(t, fam)
			b := enginetest.NewBackend("", 8192)
			b.ModelInfo.VocabSize = tok.VocabSize()
			b.ModelInfo.EOS = tok.EOS()
			b.Logits = noise
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
				for seed := range seeds {
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
