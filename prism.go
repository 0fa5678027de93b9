package prism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/onnx"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

// Environment variables Open reads for settings no option gives. A malformed
// value is an error naming the variable.
const (
	// EnvDevice is the device: auto (default), cpu or cuda.
	EnvDevice = "PRISM_DEVICE"
	// EnvThreads is the intra-op thread count for ONNX models (spec P6); unset
	// leaves it to the model folder's session_options or the runtime.
	EnvThreads = "PRISM_THREADS"
)

// Option configures Open.
type Option func(*config)

type config struct {
	device     string
	deviceSet  bool
	threads    int
	threadsSet bool
	ortLibrary string
	logger     *slog.Logger
	engineOpts []engine.Option
	prefill    int // WithPrefillChunk's value, -1 when not given
	lock       *lock.Lock
	checker    *resources.Checker
	noLock     bool
	getenv     func(string) string
	ortConfig  map[string]string
}

// WithDevice selects the execution provider: "auto" (default: CUDA when it
// works, else the CPU with a warning), "cpu", or "cuda" (fails naming the
// cause when CUDA cannot be used; never runs on the CPU instead).
func WithDevice(device string) Option {
	return func(c *config) { c.device, c.deviceSet = device, true }
}

// WithThreads sets the intra-op thread count (PRISM_THREADS); 0 leaves it to
// the model folder or the runtime.
func WithThreads(n int) Option {
	return func(c *config) { c.threads, c.threadsSet = n, true }
}

// WithORTLibrary names the ONNX Runtime shared library; by default
// PRISM_ORT_LIB, then the cache filled by `go run ./internal/cmd/fetch ort`.
func WithORTLibrary(path string) Option {
	return func(c *config) { c.ortLibrary = path }
}

// WithLogger sets the logger for load, fallback and engine messages.
// Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithPrefillChunk sets how many prompt tokens go through the model per
// step (PRISM_PREFILL_CHUNK, default 1024; 0 sends the whole prompt).
func WithPrefillChunk(n int) Option {
	return func(c *config) {
		c.prefill = n
		c.engineOpts = append(c.engineOpts, engine.WithPrefillChunk(n))
	}
}

// WithSessionConfig adds ONNX Runtime session configuration entries (the
// keys of onnxruntime_session_options_config_keys.h). For example
// {"session.disable_prepacking": "1"} makes single-token steps faster on
// models whose step is dominated by a narrow output projection, at the cost
// of slower prompt processing; docs/onnx.md has the figures.
func WithSessionConfig(entries map[string]string) Option {
	return func(c *config) {
		if c.ortConfig == nil {
			c.ortConfig = make(map[string]string, len(entries))
		}
		maps.Copy(c.ortConfig, entries)
	}
}

// WithEngineOptions passes options through to engine.New.
func WithEngineOptions(opts ...engine.Option) Option {
	return func(c *config) { c.engineOpts = append(c.engineOpts, opts...) }
}

// WithLock uses l as the machine-wide load lock instead of lock.New()
// (PRISM_HOME or ~/.prism).
func WithLock(l *lock.Lock) Option {
	return func(c *config) { c.lock = l }
}

// WithChecker uses ch for the memory budget instead of
// resources.NewChecker() (PRISM_RESOURCE_CHECK, PRISM_*_RESERVE_MB).
func WithChecker(ch *resources.Checker) Option {
	return func(c *config) { c.checker = ch }
}

// WithoutLoadLock skips the machine-wide load lock. Only for callers that
// serialise loads themselves; the budget check still runs.
func WithoutLoadLock() Option {
	return func(c *config) { c.noLock = true }
}

// WithGetenv replaces os.Getenv as the source of PRISM_* settings.
func WithGetenv(getenv func(string) string) Option {
	return func(c *config) { c.getenv = getenv }
}

func newConfig(opts []Option) (*config, error) {
	c := &config{getenv: os.Getenv, prefill: -1}
	for _, o := range opts {
		o(c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if !c.deviceSet {
		c.device = strings.ToLower(strings.TrimSpace(c.getenv(EnvDevice)))
		if c.device == "" {
			c.device = onnx.DeviceAuto
		}
		switch c.device {
		case onnx.DeviceAuto, onnx.DeviceCPU, onnx.DeviceCUDA:
		default:
			return nil, fmt.Errorf("%s=%q: want auto, cpu or cuda", EnvDevice, c.device)
		}
	}
	if !c.threadsSet {
		if v := strings.TrimSpace(c.getenv(EnvThreads)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s=%q: want a positive whole number", EnvThreads, v)
			}
			c.threads = n
		}
	}
	switch c.device {
	case onnx.DeviceAuto, onnx.DeviceCPU, onnx.DeviceCUDA:
	default:
		return nil, fmt.Errorf("unknown device %q: want auto, cpu or cuda", c.device)
	}
	if c.threads < 0 {
		return nil, fmt.Errorf("threads must be 0 or positive, have %d", c.threads)
	}
	c.engineOpts = append([]engine.Option{engine.WithLogger(c.logger)}, c.engineOpts...)
	return c, nil
}

// Open loads model — a model folder in the onnxruntime-genai or Hugging Face
// optimum layout — and returns a ready engine. It resolves the folder, loads
// its tokenizer, takes the machine-wide load lock (spec P2), checks the
// RAM/VRAM budget (P1; a refusal never reaches the runtime's loader, P3),
// loads the graph on the requested device (I1), marks the model resident
// and releases the lock before returning: the lock is never held while
// generating.
//
// Every failure is an *engine.ModelLoadError (code model_load_failed, or
// insufficient_resources when the budget refused) naming the file or
// field at fault. The caller closes the engine.
func Open(ctx context.Context, model string, opts ...Option) (*engine.Engine, error) {
	fail := func(err error) (*engine.Engine, error) {
		var le *engine.ModelLoadError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, &engine.ModelLoadError{Model: model, Err: err}
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return fail(err)
	}
	dir, err := resolve(model)
	if err != nil {
		return fail(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return fail(err)
	}

	lk := cfg.lock
	if lk == nil && !cfg.noLock {
		if lk, err = lock.New(); err != nil {
			return fail(err)
		}
	}
	if !cfg.noLock {
		held, err := lk.Acquire(ctx, model)
		if err != nil {
			return fail(err)
		}
		defer held.Release()
	}

	checker := cfg.checker
	if checker == nil {
		copts := []resources.Option{resources.WithLogger(cfg.logger)}
		if lk != nil {
			copts = append(copts, resources.WithLock(lk))
		}
		checker = resources.NewChecker(copts...)
	}
	budgetDevice := budgetDevice(cfg.device, checker)
	before := checker.Snapshot(budgetDevice != onnx.DeviceCPU)
	plan := resources.Plan{}
	if cfg.prefill > 0 {
		plan.PrefillChunk = cfg.prefill // the headroom is for the chunk actually used
	}
	if _, err := checker.Check(ctx, dir, budgetDevice, plan); err != nil {
		return fail(err)
	}

	backend, err := onnx.Open(ctx, dir, onnx.Options{
		ID: model, Device: cfg.device, Threads: cfg.threads, ORTLibrary: cfg.ortLibrary, Logger: cfg.logger,
		SessionConfig: cfg.ortConfig,
	})
	if err != nil {
		return fail(err)
	}
	device := backend.Info().Device
	resources.LogLoad(ctx, cfg.logger, model, device, before, checker.Snapshot(device != onnx.DeviceCPU))

	var b engine.Backend = backend
	if lk != nil {
		mark, err := lk.MarkResident(model)
		if err != nil {
			cfg.logger.Warn("cannot mark the model resident; other processes will not see it", "model", model, "err", err)
		} else {
			b = &residentBackend{Backend: backend, mark: mark}
		}
	}
	e, err := engine.New(b, tokenizerAdapter{tok}, cfg.engineOpts...)
	if err != nil {
		return fail(err) // engine.New closed the backend
	}
	return e, nil
}

// resolve turns the model argument into a folder. Catalog names are not
// resolved yet: model must name a folder.
func resolve(model string) (string, error) {
	if model == "" {
		return "", errors.New("no model given: name a model folder")
	}
	st, err := os.Stat(model)
	if err != nil {
		return "", fmt.Errorf("model folder %s not found: %w", model, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("model %s is a file; give the folder that holds the graph and its config", model)
	}
	return model, nil
}

// budgetDevice is the device the memory budget is checked for. "auto" is
// checked as CUDA only when a GPU is visible, since without one the load
// ends on the CPU.
func budgetDevice(device string, ch *resources.Checker) string {
	if device != onnx.DeviceAuto {
		return device
	}
	if gpus := ch.GPUs(); gpus.Available && len(gpus.Devices) > 0 {
		return onnx.DeviceCUDA
	}
	return onnx.DeviceCPU
}

// residentBackend removes the model's resident mark when the backend closes.
type residentBackend struct {
	engine.Backend
	mark *lock.Resident
}

func (r *residentBackend) Close() error {
	return errors.Join(r.Backend.Close(), r.mark.Close())
}

// tokenizerAdapter gives engine the streaming decoder through its interface.
type tokenizerAdapter struct{ *tokenizer.Tokenizer }

func (t tokenizerAdapter) NewStreamDecoder(skipSpecial bool) engine.StreamDecoder {
	return t.NewDecoder(skipSpecial)
}
