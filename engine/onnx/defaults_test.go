//go:build cgo

package onnx

import (
	"slices"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/onnxgen"
)

// The folder's generation settings reach ModelInfo.Defaults in both layouts,
// which is what the engine applies to requests that leave them unset.
func TestModelInfoReportsTheFolderDefaults(t *testing.T) {
	s := &onnxgen.Sampling{DoSample: true, Temperature: 0.7, TopK: 20, TopP: 0.8, RepetitionPenalty: 1.05, MaxLength: 48}
	want := engine.SamplingDefaults{DoSample: true, Temperature: 0.7, TopK: 20, TopP: 0.8, RepetitionPenalty: 1.05, MaxLength: 48}
	genai := onnxgen.Tiny()
	genai.Layout = onnxgen.LayoutGenAI
	genai.Sampling = s
	gqa := genai
	gqa.Attention = onnxgen.AttentionGQA
	optimum := onnxgen.Tiny()
	optimum.Sampling = s
	builder := onnxgen.Tiny()
	builder.Layout = onnxgen.LayoutGenAI
	cases := []struct {
		name string
		cfg  onnxgen.Config
		want engine.SamplingDefaults
	}{
		{"genai search section", genai, want},
		{"genai with GroupQueryAttention", gqa, want},
		{"optimum generation_config.json", optimum, want},
		{"the model builder's greedy search", builder, engine.SamplingDefaults{Temperature: 1, TopK: 1, TopP: 1, RepetitionPenalty: 1, MaxLength: builder.Context}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := openModel(t, writeModel(t, c.cfg), Options{})
			if got := b.Info().Defaults; got != c.want {
				t.Errorf("Info().Defaults = %+v; want %+v", got, c.want)
			}
			if got := b.SearchDefaults(); got != c.want {
				t.Errorf("SearchDefaults() = %+v; want %+v", got, c.want)
			}
		})
	}
}

// The folder's max_length counts the prompt too and ends a request that
// gives no max_tokens on the real runtime, in both layouts: a scripted
// model that would go on for the whole script stops at max_length with
// finish reason length, and max_tokens given by the request wins.
func TestFolderMaxLengthEndsGeneration(t *testing.T) {
	const script = "The quick brown fox jumps over the lazy dog."
	optimum := byteModel(onnxgen.Tiny(), script)
	optimum.Sampling = &onnxgen.Sampling{Temperature: 1, TopK: 1, TopP: 1, RepetitionPenalty: 1, MaxLength: 12}
	gqa := optimum
	gqa.Layout = onnxgen.LayoutGenAI
	gqa.Attention = onnxgen.AttentionGQA
	for name, cfg := range map[string]onnxgen.Config{"optimum": optimum, "gqa": gqa} {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, writeModel(t, cfg))
			ids, text, res, err := collect(t, e, t.Context(), engine.Request{Prompt: "Hi"}) // 2 prompt tokens
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 10 || text != script[:10] || res.FinishReason != engine.FinishLength {
				t.Fatalf("got %d tokens %q, finish %s; want 10 tokens %q, length", len(ids), text, res.FinishReason, script[:10])
			}
			if !slices.Contains(res.ModelDefaults, "max_tokens") {
				t.Fatalf("Result.ModelDefaults = %v; want max_tokens reported as the folder's", res.ModelDefaults)
			}
			ids, _, res, err = collect(t, e, t.Context(), engine.Request{Prompt: "Hi", MaxTokens: 20})
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 20 || slices.Contains(res.ModelDefaults, "max_tokens") {
				t.Fatalf("max_tokens 20: got %d tokens, defaults %v", len(ids), res.ModelDefaults)
			}
		})
	}
}
