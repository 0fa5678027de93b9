//go:build cgo

package prism_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine/onnx"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

// oneGPU is an NVML that sees one GPU with free bytes of VRAM.
type oneGPU struct{ free uint64 }

func (oneGPU) Init() error                           { return nil }
func (oneGPU) Shutdown() error                       { return nil }
func (oneGPU) DriverVersion() (string, error)        { return "580.1", nil }
func (oneGPU) DeviceCount() (int, error)             { return 1, nil }
func (oneGPU) DeviceName(int) (string, error)        { return "Test GPU", nil }
func (oneGPU) DeviceUtilization(int) (uint32, error) { return 0, nil }
func (oneGPU) DeviceTemperature(int) (uint32, error) { return 40, nil }
func (g oneGPU) DeviceMemory(int) (uint64, uint64, uint64, error) {
	const total = 8 << 30
	return total, total - g.free, g.free, nil
}

// checker budgets against availableRAM of free memory and the GPU nvml
// shows, with no reserves.
func checker(availableRAM uint64, nvml resources.NVML) *resources.Checker {
	return resources.NewChecker(
		resources.WithMemoryReader(func() (resources.Memory, error) {
			return resources.Memory{Total: 64 << 30, Available: availableRAM}, nil
		}),
		resources.WithNVML(nvml), resources.WithReserves(resources.Reserves{}))
}

func testLock(t *testing.T) *lock.Lock {
	t.Helper()
	lk, err := lock.New(lock.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// With device auto on a machine where NVML sees a GPU but the runtime has
// no CUDA provider, the load runs on the CPU, so the budget is the CPU's:
// a GPU with no free VRAM does not refuse it.
func TestAutoBudgetsTheDeviceThatLoads(t *testing.T) {
	lib := fixtures.ORTLib(t)
	if onnx.CUDAProvider(lib) == nil {
		t.Skip("this runtime has a CUDA provider; the case needs one without")
	}
	e, err := prism.Open(t.Context(), model(t), prism.WithDevice("auto"), prism.WithORTLibrary(lib),
		prism.WithChecker(checker(16<<30, oneGPU{free: 1 << 20})), prism.WithLock(testLock(t)))
	if err != nil {
		t.Fatalf("auto on a GPU the runtime cannot use: %v", err)
	}
	defer e.Close()
	if e.Info().Device != "cpu" {
		t.Fatalf("device %s", e.Info().Device)
	}
	// Asked for CUDA, the budget is CUDA's and refuses before the loader.
	_, err = prism.Open(t.Context(), model(t), prism.WithDevice("cuda"), prism.WithORTLibrary(lib),
		prism.WithChecker(checker(16<<30, oneGPU{free: 1 << 20})), prism.WithLock(testLock(t)))
	var ir *resources.InsufficientResourcesError
	if !errors.As(err, &ir) || !strings.Contains(err.Error(), "insufficient VRAM") {
		t.Fatalf("cuda with no free VRAM: %v", err)
	}
}

var (
	exportOnce sync.Once
	exportDir  string
	exportErr  error
)

// exportModel writes (once) the demo model as an onnx-community export
// with an fp32 and a q4 graph.
func exportModel(t *testing.T) string {
	t.Helper()
	exportOnce.Do(func() {
		ctx := context.Background()
		tokDir, err := fixtures.FetchTokenizer(ctx, "llama2")
		if err != nil {
			exportErr = err
			return
		}
		cfg := onnxgen.Tiny()
		cfg.Vocab = 0
		cfg.Context = 512
		cfg.TokenizerDir = tokDir
		cfg.Tied = false // so that q4 stores less than fp32 (a tied lm_head is kept twice)
		cfg.Variants = []string{"fp32", "q4"}
		exportDir = filepath.Join(testRoot, "export")
		exportErr = onnxgen.Write(ctx, exportDir, cfg)
	})
	if exportErr != nil {
		t.Fatal(exportErr)
	}
	return exportDir
}

// need is what the budget asks of free RAM for variant v of dir on the CPU.
func need(t *testing.T, dir, v string) uint64 {
	t.Helper()
	est, err := resources.EstimateModel(dir, "cpu", resources.Plan{Variant: v, PrefillChunk: resources.DefaultPrefillChunk})
	if err != nil {
		t.Fatal(err)
	}
	return est.Total()
}

// With no variant named, Open loads the most accurate variant that fits:
// fp32 when it fits, else q4, logged; a named variant is checked alone.
func TestOpenPicksTheMostAccurateVariantThatFits(t *testing.T) {
	dir := exportModel(t)
	fp32, q4 := need(t, dir, "fp32"), need(t, dir, "q4")
	if q4 >= fp32 {
		t.Fatalf("q4 needs %d, fp32 %d", q4, fp32)
	}
	cases := []struct {
		name      string
		available uint64
		variant   string
		want      string // variant loaded, "" for a refusal
	}{
		{"both fit", fp32, "", "fp32"},
		{"only q4 fits", (fp32 + q4) / 2, "", "q4"},
		{"named fp32 does not fit", (fp32 + q4) / 2, "fp32", ""},
		{"none fits", q4 - 1, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log strings.Builder
			e, err := prism.Open(t.Context(), dir, prism.WithDevice("cpu"), prism.WithVariant(c.variant),
				prism.WithChecker(checker(c.available, oneGPU{})), prism.WithLock(testLock(t)), prism.WithLogger(logTo(&log)))
			if c.want == "" {
				var ir *resources.InsufficientResourcesError
				if !errors.As(err, &ir) {
					t.Fatalf("want a refusal, got %v", err)
				}
				if c.variant == "" && !strings.Contains(err.Error(), "none of the variants present (fp32, q4) fits") {
					t.Fatalf("refusal %q does not say no variant fits", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.Info().Variant != c.want {
				t.Fatalf("loaded %q, want %s", e.Info().Variant, c.want)
			}
			if !strings.Contains(log.String(), "msg=\"variant picked\"") || !strings.Contains(log.String(), "variant="+c.want) {
				t.Fatalf("the log does not say which variant was picked:\n%s", log.String())
			}
		})
	}
	// PRISM_VARIANT is WithVariant's variable.
	e, err := prism.Open(t.Context(), dir, prism.WithEnv([]string{"PRISM_VARIANT=q4", "PRISM_DEVICE=cpu"}),
		prism.WithChecker(checker(64<<30, oneGPU{})), prism.WithLock(testLock(t)))
	if err != nil {
		t.Fatal(err)
	}
	if e.Info().Variant != "q4" {
		t.Fatalf("PRISM_VARIANT=q4 loaded %q", e.Info().Variant)
	}
	e.Close()

	_, err = prism.Open(t.Context(), dir, prism.WithDevice("cpu"), prism.WithVariant("fp16"), prism.WithLock(testLock(t)))
	var ve *onnx.VariantError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "it holds fp32, q4") {
		t.Fatalf("missing variant: %v", err)
	}
}

// logTo is a logger writing text lines to w.
func logTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// The backend's load log says who picked the variant: Open by the device
// rule (and, when the budget made it step down, that it took the first that
// fits), or the user, by option or by PRISM_VARIANT.
func TestOpenSaysWhoPickedTheVariant(t *testing.T) {
	tokDir, err := fixtures.FetchTokenizer(t.Context(), "llama2")
	if err != nil {
		t.Fatal(err)
	}
	cfg := onnxgen.Tiny()
	cfg.Vocab = 0
	cfg.Context = 512
	cfg.TokenizerDir = tokDir
	cfg.Tied = false
	cfg.Variants = []string{"fp32", "q4", "fp16"}
	dir := filepath.Join(t.TempDir(), "export")
	if err := onnxgen.Write(t.Context(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	if fp32, q4 := need(t, dir, "fp32"), need(t, dir, "q4"); q4 >= fp32 {
		t.Fatalf("q4 needs %d, fp32 %d", q4, fp32)
	}
	for _, c := range []struct {
		name      string
		available uint64
		opts      []prism.Option
		want      string // the variant field of the backend's "model loaded" line (the one naming the graph)
	}{
		{"device rule", 64 << 30, []prism.Option{prism.WithDevice("cpu")},
			`variant="fp32 (picked for cpu by the device rule; not picked: q4, fp16)"`},
		{"device rule within the budget", need(t, dir, "q4"), []prism.Option{prism.WithDevice("cpu")},
			`variant="q4 (picked for cpu by the device rule, the first that fits the memory budget; not picked: fp32, fp16)"`},
		{"option", 64 << 30, []prism.Option{prism.WithDevice("cpu"), prism.WithVariant("q4")},
			`variant="q4 (named by the caller)"`},
		{"PRISM_VARIANT", 64 << 30, []prism.Option{prism.WithEnv([]string{"PRISM_VARIANT=fp16", "PRISM_DEVICE=cpu"})},
			`variant="fp16 (named by the caller)"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log strings.Builder
			opts := append([]prism.Option{prism.WithChecker(checker(c.available, oneGPU{})), prism.WithLock(testLock(t)),
				prism.WithLogger(logTo(&log))}, c.opts...)
			e, err := prism.Open(t.Context(), dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var loaded string
			for line := range strings.Lines(log.String()) {
				if strings.Contains(line, `msg="model loaded"`) && strings.Contains(line, " graph=") {
					loaded = line
				}
			}
			if !strings.Contains(loaded, c.want) {
				t.Fatalf("the model loaded line lacks %s:\n%s", c.want, log.String())
			}
		})
	}
}
