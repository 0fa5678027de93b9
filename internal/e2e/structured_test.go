//go:build cgo

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/tools"
)

// acceptanceSeeds scales the random-model runs to the full acceptance
// size: with N > 0 every schema of engine/grammar's corpus runs with N
// seeds, greedy and sampled (docs/structured-outputs.md, "How it is
// tested"). It takes hours; `make test` runs the default sample.
var acceptanceSeeds = flag.Int("acceptance.seeds", 0, "seeds per schema for the full acceptance run (0: the short sample)")

// structuredSchemas are a few of engine/grammar's corpus: OpenAI's
// documented examples (one recursive), a tool's parameters, numeric
// bounds, and length bounds within patterns and formats.
var structuredSchemas = []string{"openai_weather", "openai_linked_list", "tool_search", "numbers", "string_bounds_patterns"}

// TestStructuredOutputOnRandomModels generates through the real ONNX
// Runtime with random-weight models (whose unconstrained output is noise)
// sized to each of the six real tokenizers, under each schema, greedy and
// sampled, and checks every complete output with an independent validator.
func TestStructuredOutputOnRandomModels(t *testing.T) {
	seeds := int64(2)
	if testing.Short() || raceEnabled { // make test runs both seeds without -race
		seeds = 1
	}
	schemas := structuredSchemas
	if *acceptanceSeeds > 0 {
		seeds, schemas = int64(*acceptanceSeeds), allSchemas(t)
	}
	for _, fam := range fixtures.Families {
		t.Run(fam, func(t *testing.T) {
			tokDir := fixtures.TokenizerDir(t, fam)
			eng, vocab := acceptanceModel(t, tokDir)
			compiler := grammar.NewCompiler(vocab, 0)
			complete, runs := 0, 0
			for _, name := range schemas {
				schema := readSchema(t, name)
				g, err := compiler.Schema(schema, grammar.Options{Strict: true})
				if err != nil {
					t.Fatal(err)
				}
				s := compileValidator(t, name, schema)
				for seed := range seeds {
					for _, temp := range []float64{0, 0.9} {
						text, res, err := eng.Generate(t.Context(), engine.Request{
							Prompt: seededPrompt("Reply in JSON.", seed), MaxTokens: 200, Temperature: temp, Seed: &seed, Constraint: g,
							RepetitionPenalty: 1.3, FrequencyPenalty: 0.5})
						if err != nil {
							t.Fatal(err)
						}
						runs++
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
			t.Logf("%d of %d outputs complete, all validated", complete, runs)
		})
	}
}

// acceptanceModel writes and opens a random-weight model sized to the
// tokenizer in tokDir. At the full acceptance size it is the smallest
// shape (one layer, hidden 16) on one runtime thread, so that two runs
// share the machine's cores: the weights are noise at any size, and the
// output layer over the real vocabulary is what a step costs.
func acceptanceModel(t *testing.T, tokDir string) (*engine.Engine, *grammar.Vocabulary) {
	t.Helper()
	cfg := onnxgen.Tiny()
	cfg.Context = 1024
	cfg.TokenizerDir = tokDir
	cfg.Vocab = 0
	var opts []prism.Option
	if *acceptanceSeeds > 0 {
		cfg.Layers, cfg.Hidden, cfg.Intermediate = 1, 16, 32
		opts = append(opts, prism.WithThreads(1))
	}
	dir := filepath.Join(t.TempDir(), "model")
	if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	return openConstrained(t, dir, opts...)
}

// openConstrained opens the model in dir on the CPU and builds the
// grammar vocabulary of its tokenizer.
func openConstrained(t testing.TB, dir string, opts ...prism.Option) (*engine.Engine, *grammar.Vocabulary) {
	t.Helper()
	eng := openModel(t, dir, opts...)
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := grammar.NewVocabulary(tok)
	if err != nil {
		t.Fatal(err)
	}
	return eng, vocab
}

// seededPrompt varies the prompt with the seed: greedy decoding ignores
// the seed, so without it every greedy run of a schema would repeat the
// first one's answer.
func seededPrompt(p string, seed int64) string {
	if seed == 0 {
		return p
	}
	return fmt.Sprintf("%s (%d)", p, seed)
}

// allSchemas names every schema of engine/grammar's corpus.
func allSchemas(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "engine", "grammar", "testdata", "schemas", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	return names
}

// TestToolCallsOnRandomModels is the same for tool calls in every format
// the grammar covers: random-weight models sized to a tokenizer of that
// format generate under tool_choice "required" (one call, and parallel
// calls), greedy and sampled; every complete answer parses with the tools
// package into calls of the offered tools whose arguments validate.
func TestToolCallsOnRandomModels(t *testing.T) {
	seeds := int64(2)
	if testing.Short() || raceEnabled { // make test runs both seeds without -race
		seeds = 1
	}
	if *acceptanceSeeds > 0 {
		seeds = int64(*acceptanceSeeds)
	}
	// Random weights loop inside free strings, so one tool takes no free
	// text at all: most complete answers call it.
	offered := map[string][]byte{"search": readSchema(t, "tool_search"),
		"forecast": []byte(`{"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["unit"],"additionalProperties":false}`)}
	for _, c := range []struct {
		family string
		format tools.Format
	}{{"qwen3", tools.FormatHermes}, {"llama3_1", tools.FormatLlama3}, {"llama2", tools.FormatMistral},
		{"deepseek_v3", tools.FormatDeepSeekV3}, {"gptoss", tools.FormatHarmony}} {
		t.Run(c.format.String(), func(t *testing.T) {
			tokDir := fixtures.TokenizerDir(t, c.family)
			eng, vocab := acceptanceModel(t, tokDir)
			sx, _ := c.format.Syntax()
			var ts []grammar.Tool
			vals := map[string]*jsonschema.Schema{}
			for _, name := range []string{"search", "forecast"} {
				ts = append(ts, grammar.Tool{Name: name, Parameters: offered[name], Strict: true})
				vals[name] = compileValidator(t, name, offered[name])
			}
			complete, runs := 0, 0
			for _, parallel := range []bool{false, true} {
				g, err := grammar.CompileToolCalls(vocab, ts, grammar.CallOptions{Parallel: parallel, Syntax: grammar.CallSyntax{
					Trigger: sx.Trigger, Begin: sx.Begin, End: sx.End, Open: sx.Open, Close: sx.Close, Sep: sx.Sep,
					ArgsKey: sx.ArgsKey, WholeAnswer: sx.WholeAnswer, Tokens: sx.Tokens, NameEnd: sx.NameEnd, Guard: sx.Guard, ContentBegin: sx.ContentBegin}})
				if err != nil {
					t.Fatal(err)
				}
				for seed := range seeds {
					for _, temp := range []float64{0, 0.9} {
						text, res, err := eng.Generate(t.Context(), engine.Request{
							Prompt: seededPrompt("Call a tool.", seed), MaxTokens: 250, Temperature: temp, Seed: &seed, Constraint: g,
							RepetitionPenalty: 1.3, FrequencyPenalty: 0.5, KeepSpecial: true})
						if err != nil {
							t.Fatal(err)
						}
						runs++
						if res.FinishReason != engine.FinishStop {
							continue
						}
						complete++
						if err := checkToolCalls(c.format, text, vals, parallel); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			t.Logf("%d of %d answers complete, all valid calls", complete, runs)
		})
	}
}

// checkToolCalls parses a complete answer and checks its calls.
func checkToolCalls(f tools.Format, text string, vals map[string]*jsonschema.Schema, parallel bool) error {
	res := tools.Parse(f, text)
	if len(res.Calls) == 0 || !parallel && len(res.Calls) > 1 || len(res.Warnings) > 0 {
		return fmt.Errorf("%q parsed as %d calls, warnings %v", text, len(res.Calls), res.Warnings)
	}
	for _, call := range res.Calls {
		s, ok := vals[call.Name]
		if !ok {
			return fmt.Errorf("%q: a call of %q, not offered", text, call.Name)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(call.Arguments))
		if err != nil {
			return fmt.Errorf("%q: arguments not JSON: %v", text, err)
		}
		if err := s.Validate(v); err != nil {
			return fmt.Errorf("%q: arguments do not validate: %v", text, err)
		}
	}
	return nil
}

func readSchema(t testing.TB, name string) []byte {
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
