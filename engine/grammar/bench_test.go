package grammar_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/internal/jsonorder"
)

// instances returns the valid instances of the MaskBench-format corpus with
// their schemas.
func instances(b testing.TB) (schemas [][]byte, texts []string) {
	b.Helper()
	files, _ := filepath.Glob("../../internal/cmd/maskbench/testdata/*.json")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		doc, err := jsonorder.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		schema := []byte(doc.Get("schema").Python())
		if _, err := grammar.CompileSchema(byteVocab(), schema, grammar.Options{Strict: true}); err != nil {
			continue
		}
		for _, tc := range doc.Get("tests").Items {
			if tc.Get("valid").Bool {
				schemas, texts = append(schemas, schema), append(texts, tc.Get("data").Python())
			}
		}
	}
	return schemas, texts
}

// BenchmarkMaskQwen measures one mask over the 151k Qwen3 vocabulary,
// walking the corpus's valid instances token by token. cold compiles a
// fresh grammar per instance (every state is built on first use; the first
// step of each instance is not timed); warm repeats instances on a grammar
// that has seen them (cached masks). Besides the mean it reports the
// median and the 99th percentile of the steps in the thread's CPU time
// (cpu-p50-us, cpu-p99-us), which a loaded machine does not inflate.
func BenchmarkMaskQwen(b *testing.B) {
	tok, v := family(b, "qwen3")
	schemas, texts := instances(b)
	mask := make([]uint64, (v.Size()+63)/64)
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			cpu := threadCPU()
			warm := map[int]*grammar.Grammar{}
			var spent time.Duration
			var steps []time.Duration
			for b.Loop() {
				for i, text := range texts {
					g := warm[i]
					if g == nil || mode == "cold" {
						var err error
						if g, err = grammar.CompileSchema(v, schemas[i], grammar.Options{Strict: true}); err != nil {
							b.Fatal(err)
						}
						warm[i] = g
					}
					m := g.Start()
					for k, id := range tok.Encode(text) {
						t0, c0 := time.Now(), cpu()
						clear(mask)
						m.Mask(mask)
						if k > 0 {
							spent += time.Since(t0)
							steps = append(steps, cpu()-c0)
						}
						if !m.Advance(id) {
							b.Fatalf("instance %d refused at token %d", i, k)
						}
					}
				}
			}
			slices.Sort(steps)
			at := func(p float64) float64 {
				return float64(steps[min(int(p*float64(len(steps))), len(steps)-1)].Nanoseconds()) / 1e3
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(len(steps))/1e3, "us/mask")
			b.ReportMetric(at(0.5), "cpu-p50-us")
			b.ReportMetric(at(0.99), "cpu-p99-us")
		})
	}
}

// toolSchema is a typical tool's parameters.
var toolSchema = []byte(`{"type":"object","properties":{"query":{"type":"string","description":"What to search for"},
"max_results":{"type":"integer","minimum":1,"maximum":50},"site":{"type":"string","format":"hostname"},
"since":{"type":"string","format":"date"},"lang":{"type":"string","enum":["en","de","fr","ja"]},
"safe":{"type":"boolean"}},"required":["query","max_results","lang","safe"],"additionalProperties":false}`)

func BenchmarkCompileToolSchema(b *testing.B) {
	_, v := family(b, "qwen3")
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if _, err := grammar.CompileSchema(v, toolSchema, grammar.Options{Strict: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := grammar.NewCompiler(v, 0)
		for b.Loop() {
			if _, err := c.Schema(toolSchema, grammar.Options{Strict: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVocabularyQwen(b *testing.B) {
	tok, _ := family(b, "qwen3")
	for b.Loop() {
		if _, err := grammar.NewVocabulary(tok); err != nil {
			b.Fatal(err)
		}
	}
}
