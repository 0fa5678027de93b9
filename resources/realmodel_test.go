package resources_test

import (
	"context"
	"os"
	"path/filepath"
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
				if filepath.Ext(e.Name()) == ".onnx" || filepath.Ext(e.Name()) == ".data" || filepath.Ext(e.Name()) == ".onnx_data" {
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
