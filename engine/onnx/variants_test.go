//go:build cgo

package onnx

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/internal/onnxgen"
)

// exportModel is an onnx-community export with every dtype variant, its
// external data split into files of at most 48 KiB (model.onnx_data,
// model.onnx_data_1, ...), as large exports ship.
func exportModel(t *testing.T) (string, onnxgen.Config) {
	t.Helper()
	cfg := byteModel(onnxgen.Tiny(), "")
	cfg.Variants = modelfolder.Variants()
	cfg.DataShard = 48 << 10
	return modelDir(t, "export-all-variants", cfg), cfg
}

// Each variant of the export loads by name through the real runtime and
// decodes the oracle's greedy tokens, token for token.
func TestExportVariantsMatchOracle(t *testing.T) {
	dir, cfg := exportModel(t)
	prompt := "Hello, prism! Tell me a story."
	for _, v := range cfg.Variants {
		t.Run(v, func(t *testing.T) {
			if shards, _ := filepath.Glob(filepath.Join(dir, onnxgen.VariantFile(v)+"_data_*")); len(shards) == 0 {
				t.Fatalf("%s: external data not split", v)
			}
			o, err := onnxgen.NewOracle(cfg.ForVariant(v))
			if err != nil {
				t.Fatal(err)
			}
			want := o.Greedy(enginetest.ByteTokenizer{}.Encode(prompt), 24, []int32{enginetest.EOS})
			b := openModel(t, dir, Options{Variant: v})
			if b.Info().Variant != v || filepath.Base(b.cfg.graphPath) != filepath.Base(onnxgen.VariantFile(v)) {
				t.Fatalf("loaded %s (%s), want %s", b.Info().Variant, b.cfg.graphPath, v)
			}
			e, err := engine.New(b, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(t)),
				engine.WithLoopGuard(engine.LoopGuard{Off: true}))
			if err != nil {
				t.Fatal(err)
			}
			got, _, _, err := collect(t, e, context.Background(), engine.Request{Prompt: prompt, MaxTokens: 24})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("engine %v, oracle %v", got, want)
			}
		})
	}
}

// With several variants and none named, the CPU load takes fp32 and says
// in the load log which it took and which it did not.
func TestExportVariantChosenByRule(t *testing.T) {
	dir, _ := exportModel(t)
	var log strings.Builder
	b := openModel(t, dir, Options{Logger: logTo(&log)})
	if b.Info().Variant != "fp32" {
		t.Fatalf("picked %q, want fp32", b.Info().Variant)
	}
	for _, want := range []string{"variant=\"fp32 (picked for cpu by the device rule; not picked: q8, int8, uint8, q4, bnb4, q4f16, fp16)\"", "variants_not_picked=\"[q8 int8 uint8 q4 bnb4 q4f16 fp16]\""} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("load log lacks %s:\n%s", want, log.String())
		}
	}

	// A folder with only the q4 variant loads it.
	q4 := byteModel(onnxgen.Tiny(), "")
	q4.Variants = []string{"q4"}
	only := modelDir(t, "export-q4", q4)
	if got := openModel(t, only, Options{}).Info().Variant; got != "q4" {
		t.Fatalf("q4-only folder loaded %q", got)
	}
}

func TestExportVariantErrors(t *testing.T) {
	q4 := byteModel(onnxgen.Tiny(), "")
	q4.Variants = []string{"q4", "fp16"}
	dir := modelDir(t, "export-q4-fp16", q4)
	_, err := Open(context.Background(), dir, Options{Variant: "fp32", Device: DeviceCPU, Logger: testLogger(t)})
	var ve *VariantError
	var le *engine.ModelLoadError
	if !errors.As(err, &ve) || !errors.As(err, &le) || !slices.Equal(ve.Present, []string{"q4", "fp16"}) {
		t.Fatalf("want a ModelLoadError with a VariantError listing q4, fp16; got %v", err)
	}
	if _, err := Open(context.Background(), dir, Options{Variant: "int4"}); !errors.As(err, &ve) {
		t.Fatalf("unknown variant: %v", err)
	}

	// The split decoder export: the error says what to do.
	split := filepath.Join(t.TempDir(), "split")
	if err := os.MkdirAll(filepath.Join(split, "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"config.json": `{"num_hidden_layers": 2}`, "onnx/decoder_model.onnx": "x", "onnx/decoder_with_past_model.onnx": "x"} {
		if err := os.WriteFile(filepath.Join(split, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Open(context.Background(), split, Options{Device: DeviceCPU})
	var se *SplitDecoderError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "optimum-cli export onnx") {
		t.Fatalf("split decoder: %v", err)
	}
}

// logTo is a logger writing text lines to w.
func logTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
