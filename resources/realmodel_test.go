package resources_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/resources"
)

// TestEstimateGeneratedModels runs the estimate on complete model folders
// written by the project's generator in both layouts real models ship in,
// and checks it against the generator's own configuration and files.
func TestEstimateGeneratedModels(t *testing.T) {
	for _, layout := range []onnxgen.Layout{onnxgen.LayoutOptimum, onnxgen.LayoutGenAI} {
		t.Run(string(layout), func(t *testing.T) {
			cfg := onnxgen.Tiny()
			cfg.Layout = layout
			cfg.DataShard = 40 << 10 // data split as large exports split it
			dir := t.TempDir()
			if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
				t.Fatal(err)
			}
			est, err := resources.EstimateModel(dir, "cpu", resources.Plan{Tokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			var want uint64
			graphDir := filepath.Dir(filepath.Join(dir, cfg.ModelFile()))
			entries, _ := os.ReadDir(graphDir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), filepath.Base(cfg.ModelFile())) {
					info, _ := e.Info()
					want += uint64(info.Size())
				}
			}
			if est.WeightBytes == 0 || est.WeightBytes != want {
				t.Fatalf("weights %d from %v, want %d", est.WeightBytes, est.WeightFiles, want)
			}
			s := est.Shape
			if s.Layers != cfg.Layers || s.KVHeads != cfg.KVHeads || s.HeadDim != cfg.HeadSize() || s.Hidden != cfg.Hidden || s.Vocab != cfg.Vocab {
				t.Fatalf("shape %+v, generator config %+v", s, cfg)
			}
			if est.KVBytesPerToken != uint64(cfg.Layers*cfg.KVHeads*cfg.HeadSize()*2*4) {
				t.Fatalf("kv per token %d", est.KVBytesPerToken)
			}
		})
	}
}

// On an onnx-community export written by the generator, the estimate of
// each variant is the size of exactly that variant's files.
func TestEstimateGeneratedExport(t *testing.T) {
	cfg := onnxgen.Tiny()
	cfg.Variants = []string{"fp32", "fp16", "q4", "q4f16"}
	cfg.DataShard = 40 << 10
	dir := t.TempDir()
	if err := onnxgen.Write(t.Context(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	for _, v := range cfg.Variants {
		est, err := resources.EstimateModel(dir, "cpu", resources.Plan{Tokens: 64, Variant: v})
		if err != nil {
			t.Fatal(err)
		}
		graph := filepath.Join(dir, onnxgen.VariantFile(v))
		files, _ := filepath.Glob(graph + "*")
		var want uint64
		for _, f := range files {
			st, _ := os.Stat(f)
			want += uint64(st.Size())
		}
		if est.Variant != v || len(est.WeightFiles) != len(files) || len(files) < 3 || est.WeightBytes != want {
			t.Errorf("%s: %d bytes from %v, want %d from %v", v, est.WeightBytes, est.WeightFiles, want, files)
		}
	}
}
