//go:build cgo

package prism_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/prism-local/prism/errcode"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/onnx"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

const demoReply = "Hello from Prism!"

var (
	demoOnce sync.Once
	demoDir  string
	demoErr  error
)

// fixtureError is a test fixture that could not be had (the tokenizer
// could not be fetched), as opposed to a failure of Prism's own code.
type fixtureError struct{ err error }

func (e *fixtureError) Error() string { return e.err.Error() }
func (e *fixtureError) Unwrap() error { return e.err }

// demoModel writes (once per test binary) a tiny scripted model with the
// real Llama-2 tokenizer that answers every prompt with demoReply. A
// tokenizer that cannot be fetched is a *fixtureError; a failure of
// Prism's own code (loading the tokenizer, writing the model) is not.
func demoModel() (string, error) {
	demoOnce.Do(func() {
		ctx := context.Background()
		tokDir, err := fixtures.FetchTokenizer(ctx, "llama2")
		if err != nil {
			demoErr = &fixtureError{err}
			return
		}
		tok, err := tokenizer.Load(tokDir)
		if err != nil {
			demoErr = err
			return
		}
		cfg := onnxgen.Tiny()
		cfg.Vocab = 0
		cfg.Context = 512
		cfg.TokenizerDir = tokDir
		cfg.Script = tok.Encode(demoReply)
		demoDir = filepath.Join(testRoot, "demo")
		demoErr = onnxgen.Write(ctx, demoDir, cfg)
	})
	return demoDir, demoErr
}

// model returns the demo model. A fixture that cannot be fetched skips the
// test outside CI; a failure of our own code always fails it.
func model(t *testing.T) string {
	t.Helper()
	dir, err := demoModel()
	if fe := (*fixtureError)(nil); errors.As(err, &fe) {
		fixtures.Unavailable(t, "demo model's tokenizer: %v", fe)
	}
	if err != nil {
		t.Fatalf("demo model: %v", err)
	}
	return dir
}

var testRoot string

// open is prism.Open with what every test here needs: the runtime library
// the fixtures found, and the load lock and resident marks under the test
// root instead of the home directory, both given through WithEnv the way a
// program passes its environment.
func open(t *testing.T, model string, opts ...prism.Option) (*engine.Engine, error) {
	t.Helper()
	env := prism.WithEnv([]string{"PRISM_ORT_LIB=" + fixtures.ORTLib(t), "PRISM_HOME=" + testHome()})
	return prism.Open(context.Background(), model, append([]prism.Option{env}, opts...)...)
}

func testHome() string { return filepath.Join(testRoot, "home") }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "prism-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestOpenGenerates(t *testing.T) {
	e, err := open(t, model(t), prism.WithDevice("cpu"), prism.WithThreads(1), prism.WithPrefillChunk(3))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	text, res, err := e.Generate(context.Background(), engine.Request{Prompt: "Who are you?"})
	if err != nil {
		t.Fatal(err)
	}
	if text != demoReply || res.FinishReason != engine.FinishStop {
		t.Fatalf("got %q (%s)", text, res.FinishReason)
	}
	if e.Info().Device != "cpu" || e.Info().FallbackReason != "" {
		t.Fatalf("device %q fallback %q", e.Info().Device, e.Info().FallbackReason)
	}
	// The lock is not held once Open returns.
	lk, _ := lock.New(lock.WithDir(testHome()))
	if h, held, _ := lk.Holder(); held {
		t.Fatalf("load lock still held by %v", h)
	}
	if rs, _ := lk.Residents(); len(rs) != 1 || rs[0].PID != os.Getpid() {
		t.Fatalf("residents %v", rs)
	}
	e.Close()
	if rs, _ := lk.Residents(); len(rs) != 0 {
		t.Fatalf("resident mark left after Close: %v", rs)
	}
}

// Device auto: with no NVIDIA GPU the CPU is the normal case (one INFO
// line, no WARN, no FallbackReason); with a GPU that NVML sees but the
// runtime cannot use, the CPU is a fallback, warned and kept in
// FallbackReason. Device cuda fails naming the cause (I1).
func TestOpenDevices(t *testing.T) {
	dir := model(t)
	lib := fixtures.ORTLib(t)
	if onnx.CUDAProvider(lib) == nil {
		t.Skip("needs a runtime without a usable CUDA provider")
	}
	for _, tt := range []struct {
		name     string
		nvml     resources.NVML
		fallback bool
		logs     []string
	}{
		{"no GPU", noGPU{}, false, []string{"level=INFO msg=\"no NVIDIA GPU: running on the CPU\""}},
		{"unusable GPU", oneGPU{free: 4 << 30}, true, []string{
			"level=INFO msg=\"a GPU is visible but the runtime cannot use it: budgeting for the CPU\"",
			"level=WARN msg=\"CUDA unavailable, running on CPU\""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			e, err := prism.Open(t.Context(), dir, prism.WithDevice("auto"), prism.WithORTLibrary(lib), prism.WithLogger(logger),
				prism.WithChecker(checker(16<<30, tt.nvml)), prism.WithLock(testLock(t)))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			reason := e.Info().FallbackReason
			if e.Info().Device != "cpu" || (reason != "") != tt.fallback || (tt.fallback && !strings.Contains(reason, "libonnxruntime_providers")) {
				t.Errorf("device %q fallback %q", e.Info().Device, reason)
			}
			for _, want := range tt.logs {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("log lacks %s:\n%s", want, logs.String())
				}
			}
			if warned := strings.Contains(logs.String(), "level=WARN"); warned != tt.fallback {
				t.Errorf("a WARN logged: %v, want %v:\n%s", warned, tt.fallback, logs.String())
			}
		})
	}
	_, err := open(t, dir, prism.WithDevice("cuda"))
	var de *onnx.DeviceError
	if !errors.As(err, &de) || errcode.Of(err) != engine.CodeModelLoadFailed {
		t.Fatalf("cuda: want a model_load_failed DeviceError, got %v", err)
	}
}

// noGPU is NVML on a machine without the NVIDIA driver.
type noGPU struct{ oneGPU }

func (noGPU) Init() error {
	return errors.New("libnvidia-ml.so.1 not found: no NVIDIA driver is installed")
}

// A refused budget never reaches the loader: with a library path that does
// not exist, reaching the loader would fail differently.
func TestOpenBudgetRefusalNeverLoads(t *testing.T) {
	ch := resources.NewChecker(resources.WithMemoryReader(func() (resources.Memory, error) {
		return resources.Memory{Total: 8 << 30, Available: 64 << 20}, nil
	}))
	_, err := open(t, model(t), prism.WithDevice("cpu"), prism.WithChecker(ch),
		prism.WithORTLibrary(filepath.Join(t.TempDir(), "missing.so")))
	var ir *resources.InsufficientResourcesError
	if !errors.As(err, &ir) || errcode.Of(err) != resources.CodeInsufficientResources {
		t.Fatalf("want insufficient_resources, got %v", err)
	}
}

func TestOpenWaitsForTheLoadLock(t *testing.T) {
	dir := t.TempDir()
	other, _ := lock.New(lock.WithDir(dir))
	held, err := other.Acquire(context.Background(), "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	mine, _ := lock.New(lock.WithDir(dir), lock.WithTimeout(100*time.Millisecond))
	_, err = open(t, model(t), prism.WithDevice("cpu"), prism.WithLock(mine))
	var te *lock.TimeoutError
	if !errors.As(err, &te) || te.Holder == nil || te.Holder.Model != "someone-else" {
		t.Fatalf("want a lock timeout naming the holder, got %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := model(t)
	env := func(kv ...string) prism.Option { return prism.WithEnv(kv) }
	cases := []struct {
		name  string
		model string
		opts  []prism.Option
		want  string
	}{
		{"missing folder", filepath.Join(t.TempDir(), "nope"), nil, "not found"},
		{"bad device", dir, []prism.Option{prism.WithDevice("tpu")}, "unknown device"},
		{"bad PRISM_THREADS", dir, []prism.Option{env("PRISM_THREADS=many")}, "PRISM_THREADS"},
		{"bad PRISM_DEVICE", dir, []prism.Option{env("PRISM_DEVICE=gpu2")}, "PRISM_DEVICE"},
		{"every bad setting at once", dir, []prism.Option{env("PRISM_DEVICE=gpu2", "PRISM_LOAD_TIMEOUT=soon")}, `PRISM_DEVICE="gpu2": want auto, cpu or cuda; PRISM_LOAD_TIMEOUT="soon"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := open(t, c.model, c.opts...)
			var le *engine.ModelLoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a ModelLoadError mentioning %q, got %v", c.want, err)
			}
		})
	}
}

func TestSessionConfigPassesThrough(t *testing.T) {
	_, err := open(t, model(t), prism.WithDevice("cpu"),
		prism.WithSessionConfig(map[string]string{"session.load_model_format": "ORT"}))
	var ge *onnx.GraphError
	if !errors.As(err, &ge) {
		t.Fatalf("an .onnx graph read as ORT format: %v, want an onnx.GraphError", err)
	}
}

// The demo model (optimum layout) gets the padded past after its proof;
// WithExactHandover gives it the exact hand-over, said in Info, with the
// same answer.
func TestExactHandoverOption(t *testing.T) {
	for _, tc := range []struct {
		opts []prism.Option
		want string
	}{
		{nil, onnx.KVPadded},
		{[]prism.Option{prism.WithExactHandover()}, onnx.KVExact},
	} {
		e, err := prism.Open(t.Context(), model(t), append([]prism.Option{prism.WithDevice("cpu"), prism.WithThreads(1)}, tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		info := e.Info()
		text, _, err := e.Generate(t.Context(), engine.Request{Prompt: "Who are you?"})
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		if info.KVCache != tc.want || info.KVCacheReason == "" || text != demoReply {
			t.Fatalf("cache %q (%q), reply %q; want %s and the demo reply", info.KVCache, info.KVCacheReason, text, tc.want)
		}
	}
}

// WithMaxBatch reaches the backend, whose proof at load passes on the demo
// model (optimum layout), and the engine; without it the model is serial.
func TestMaxBatchOption(t *testing.T) {
	for _, tc := range []struct {
		opts      []prism.Option
		batch     string
		max       int
		reasonHas string
	}{
		{nil, engine.BatchSerial, 1, "WithMaxBatch(1)"},
		{[]prism.Option{prism.WithMaxBatch(4)}, engine.BatchContinuous, 4, "proven"},
	} {
		e, err := prism.Open(t.Context(), model(t), append([]prism.Option{prism.WithDevice("cpu"), prism.WithThreads(1)}, tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		info := e.Info()
		text, _, err := e.Generate(t.Context(), engine.Request{Prompt: "Who are you?"})
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		if info.Batch != tc.batch || info.MaxBatch != tc.max || !strings.Contains(info.BatchReason, tc.reasonHas) || text != demoReply {
			t.Fatalf("batch %q max %d (%q), reply %q; want %s, %d (%q) and the demo reply", info.Batch, info.MaxBatch, info.BatchReason, text, tc.batch, tc.max, tc.reasonHas)
		}
	}
}
