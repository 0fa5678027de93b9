//go:build cgo

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// structuredSchemas are a few of engine/grammar's corpus: OpenAI's
// documented examples (one recursive) and a tool's parameters.
var structuredSchemas = []string{"openai_weather", "openai_linked_list", "tool_search", "numbers"}

// TestStructuredOutputOnRandomModels generates through the real ONNX
// Runtime with random-weight models (whose unconstrained output is noise)
// sized to each of the six real tokenizers, under each schema, greedy and
// sampled, and checks every complete output with an independent validator.
func TestStructuredOutputOnRandomModels(t *testing.T) {
	seeds := int64(2)
	if testing.Short() {
		seeds = 1
	}
	for _, fam := range fixtures.Families {
		t.Run(fam, func(t *testing.T) {
			tokDir := fixtures.TokenizerDir(t, fam)
			cfg := onnxgen.Tiny()
			cfg.Context = 1024
			cfg.TokenizerDir = tokDir
			cfg.Vocab = 0
			dir := filepath.Join(t.TempDir(), "model")
			if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
				t.Fatal(err)
			}
			eng := openModel(t, dir)
			tok, err := tokenizer.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			vocab, err := grammar.NewVocabulary(tok)
			if err != nil {
				t.Fatal(err)
			}
			compiler := grammar.NewCompiler(vocab, 0)
			complete := 0
			for _, name := range structuredSchemas {
				schema := readSchema(t, name)
				g, err := compiler.Schema(schema, grammar.Options{Strict: true})
				if err != nil {
					t.Fatal(err)
				}
				s := compileValidator(t, name, schema)
				for seed := range seeds {
					for _, temp := range []float64{0, 0.9} {
						text, res, err := eng.Generate(t.Context(), engine.Request{
							Prompt: "Reply in JSON.", MaxTokens: 200, Temperature: temp, Seed: &seed, Constraint: g,
							RepetitionPenalty: 1.3, FrequencyPenalty: 0.5})
						if err != nil {
							t.Fatal(err)
						}
						if res.FinishReason != engine.FinishStop {
							continue // cut by max_tokens or the loop guard: reported as such
						}
						complete++
						v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
						if err != nil {
							t.Fatalf("%s: not JSON: %q (%v)", name, text, err)
						}
						if err := s.Validate(v); err != nil {
							t.Fatalf("%s: %q does not validate: %v", name, text, err)
						}
					}
				}
			}
			t.Logf("%d complete outputs validated", complete)
		})
	}
}

func readSchema(t *testing.T, name string) []byte {
	t.Helper()
	return readSchemaTB(t, name)
}

func readSchemaTB(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "engine", "grammar", "testdata", "schemas", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s is not JSON", name)
	}
	return b
}

func compileValidator(t *testing.T, name string, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "mem://" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
