//go:build cgo

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// BenchmarkConstrainedDecode compares decode tokens/s with and without a
// constraint (JSON mode; a schema) with the Qwen3 tokenizer, side by side in
// one process, at the tiny random-weight shape and at the Qwen2.5-0.5B shape.
// The loop guard is off so every run decodes max_tokens tokens (a
// constrained run may end earlier on EOS; tokens/s is per decoded token
// either way).
func BenchmarkConstrainedDecode(b *testing.B) {
	tokDir := fixtures.TokenizerDir(b, "qwen3")
	for _, shape := range []struct {
		name      string
		cfg       onnxgen.Config
		maxTokens int
	}{{"tiny", onnxgen.Tiny(), 128}, {"qwen05b", onnxgen.Qwen25Half(), 32}} {
		b.Run(shape.name, func(b *testing.B) {
			cfg := shape.cfg
			cfg.Context = 1024
			cfg.TokenizerDir = tokDir
			cfg.Vocab = 0
			benchConstrained(b, constrainedModel(b, shape.name, cfg), shape.maxTokens)
		})
	}
}

// constrainedModel writes the benchmark's folder once into the cache
// (bench-models/constrained-NAME), since the 0.5B shape takes a while.
func constrainedModel(b *testing.B, name string, cfg onnxgen.Config) string {
	b.Helper()
	root, err := fixtures.CacheRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, "bench-models", "constrained-"+name)
	if onnxgen.Complete(dir, cfg) {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchConstrained(b *testing.B, dir string, maxTokens int) {
	eng, vocab := openConstrained(b, dir, prism.WithEngineOptions(engine.WithLoopGuard(engine.LoopGuard{Off: true})))
	jsonMode, err := grammar.JSONObject(vocab, grammar.Options{})
	if err != nil {
		b.Fatal(err)
	}
	schema, err := grammar.CompileSchema(vocab, readSchema(b, "openai_ui_recursive"), grammar.Options{Strict: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		c    engine.Constraint
	}{{"free", nil}, {"json_object", jsonMode}, {"schema", schema}} {
		b.Run(c.name, func(b *testing.B) {
			seed := int64(1)
			tokens, rate := 0, 0.0
			for b.Loop() {
				_, res, err := eng.Generate(b.Context(), engine.Request{Prompt: "Reply.", MaxTokens: maxTokens, Temperature: 0.8, Seed: &seed, Constraint: c.c})
				if err != nil {
					b.Fatal(err)
				}
				tokens += res.Usage.CompletionTokens
				rate += res.Timings.TokensPerSecond
				seed++
			}
			b.ReportMetric(rate/float64(b.N), "tokens/s")
			b.ReportMetric(float64(tokens)/float64(b.N), "tokens/op")
		})
	}
}
