//go:build cgo

package onnx

import (
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
