//go:build cgo

package onnx

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// variants are the generator models every backend test runs on.
func variants() map[string]onnxgen.Config {
	optimum := onnxgen.Tiny()
	genai := onnxgen.Tiny()
	genai.Layout = onnxgen.LayoutGenAI
	genai16 := genai
	genai16.DType = onnxgen.FP16
	gqa := genai
	gqa.Attention = onnxgen.AttentionGQA
	gqa16 := gqa
	gqa16.DType = onnxgen.FP16
	int4 := onnxgen.Tiny()
	int4.Quant = onnxgen.QuantInt4
	posmask := onnxgen.Tiny()
	posmask.Mask = onnxgen.MaskPositions
	posmask16 := posmask
	posmask16.DType = onnxgen.FP16
	genaiPosmask := posmask
	genaiPosmask.Layout = onnxgen.LayoutGenAI
	merged := onnxgen.Tiny()
	merged.Merged = true
	// fp16 cache and logits on the CPU, as fp16 and q4f16 exports ship.
	optimum16 := optimum
	optimum16.DType = onnxgen.FP16
	merged16 := merged
	merged16.DType = onnxgen.FP16
	q4f16 := int4
	q4f16.DType = onnxgen.FP16
	keep := onnxgen.Tiny()
	keep.LogitsToKeep = true
	combined := genai
	combined.CombinedPast = true
	hybrid := onnxgen.Tiny()
	hybrid.ConvLayers = []int{1}
	return map[string]onnxgen.Config{
		"optimum-logits-to-keep":      keep,
		"genai-combined-past":         combined,
		"optimum-hybrid-conv":         hybrid,
		"optimum-fp16":                optimum16,
		"optimum-merged-fp16":         merged16,
		"optimum-q4f16":               q4f16,
		"optimum-merged":              merged,
		"optimum-mask-positions":      posmask,
		"optimum-mask-positions-fp16": posmask16,
		"genai-mask-positions":        genaiPosmask,
		"optimum-fp32":                optimum,
		"genai-fp32":                  genai,
		"genai-fp16":                  genai16,
		"gqa-fp32":                    gqa,
		"gqa-fp16":                    gqa16,
		"optimum-int4":                int4,
	}
}

// writeModel writes cfg into a fresh folder.
func writeModel(t testing.TB, cfg onnxgen.Config) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "model")
	if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openModel(t testing.TB, dir string, opts Options) *Backend {
	t.Helper()
	if opts.ORTLibrary == "" {
		opts.ORTLibrary = fixtures.ORTLib(t)
	}
	if opts.Device == "" {
		opts.Device = DeviceCPU
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	b, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func maxRelErr(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i]-want[i])))
		den = math.Max(den, math.Abs(float64(want[i])))
	}
	return num / den
}

func TestForwardMatchesOracle(t *testing.T) {
	for name, cfg := range variants() {
		t.Run(name, func(t *testing.T) {
			dir := writeModel(t, cfg)
			b := openModel(t, dir, Options{})
			o, err := onnxgen.NewOracle(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tol := tolerance(cfg)
			worst := 0.0
			defer func() { t.Logf("worst relative error %.3g (bound %g)", worst, tol) }()
			steps := []struct {
				ids []int32
				pos int
			}{
				{[]int32{1, 2, 3, 4, 5}, 0}, // prefill
				{[]int32{6}, 5},             // decode
				{[]int32{7}, 6},
				{[]int32{8, 9, 10}, 7}, // a later chunk
				{[]int32{11}, 10},
				{[]int32{20, 21}, 3}, // truncate: reuse a prefix of 3
				{[]int32{22}, 5},
				{[]int32{30}, 0}, // start over
				{[]int32{31}, 1},
			}
			if err := b.Reserve(8); err != nil {
				t.Fatal(err)
			}
			for i, s := range steps {
				got, err := b.Forward(context.Background(), s.ids, s.pos)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				want := o.Forward(s.ids, s.pos)
				e := maxRelErr(got, want)
				worst = max(worst, e)
				if e > tol {
					t.Fatalf("step %d (%v at %d): relative error %g > %g", i, s.ids, s.pos, e, tol)
				}
			}
		})
	}
}

// testLogger sends log lines to the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func TestLoadErrors(t *testing.T) {
	lib := fixtures.ORTLib(t)
	good := modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), ""))
	corrupt := copyDir(t, good)
	if err := os.WriteFile(filepath.Join(corrupt, "onnx", "model.onnx"), []byte("this is not a protobuf"), 0o644); err != nil {
		t.Fatal(err)
	}
	noWeights := copyDir(t, good)
	if err := os.Remove(filepath.Join(noWeights, "onnx", "model.onnx_data")); err != nil {
		t.Fatal(err)
	}
	wrongVocab := copyDir(t, good)
	conf := filepath.Join(wrongVocab, "config.json")
	data, _ := os.ReadFile(conf)
	os.WriteFile(conf, []byte(strings.Replace(string(data), `"vocab_size": 258`, `"vocab_size": 999`, 1)), 0o644)

	cases := []struct {
		name, dir, file, contains string
	}{
		{"missing folder", filepath.Join(t.TempDir(), "nope"), "nope", "not found"},
		{"corrupt graph", corrupt, "model.onnx", "onnx runtime cannot read it"},
		{"missing weights", noWeights, "model.onnx", "model.onnx_data"},
		{"graph disagrees with config", wrongVocab, "model.onnx", "vocab_size 999"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(context.Background(), c.dir, Options{Device: DeviceCPU, ORTLibrary: lib, Logger: testLogger(t)})
			var le *engine.ModelLoadError
			if !errors.As(err, &le) {
				t.Fatalf("want ModelLoadError, got %T %v", err, err)
			}
			if filepath.Base(le.File) != c.file || !strings.Contains(err.Error(), c.contains) {
				t.Fatalf("file %q, error %v; want file %q containing %q", le.File, err, c.file, c.contains)
			}
			t.Log(err)
		})
	}
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	return to
}

// A long chunk runs as one runtime step (the engine's prefill chunk, not
// the backend, decides how long a step is), with the oracle's logits.
func TestLongChunk(t *testing.T) {
	for _, name := range []string{"optimum-fp32", "gqa-fp32"} {
		t.Run(name, func(t *testing.T) {
			cfg := variants()[name]
			cfg.Context = 1024
			b := openModel(t, modelDir(t, "long-"+name, cfg), Options{})
			o, err := onnxgen.NewOracle(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]int32, 257)
			for i := range ids {
				ids[i] = int32(1 + (i*7)%250)
			}
			got, err := b.Forward(context.Background(), ids, 0)
			if err != nil {
				t.Fatal(err)
			}
			if e := maxRelErr(got, o.Forward(ids, 0)); e > 1e-4 {
				t.Fatalf("relative error %g", e)
			}
			if b.cached != len(ids) || b.chunk.rows != len(ids) {
				t.Fatalf("cached %d, chunk rows %d", b.cached, b.chunk.rows)
			}
		})
	}
}
