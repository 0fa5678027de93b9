package prism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/onnx"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

// Option configures Open.
type Option func(*config)

type config struct {
	device      string
	threads     int
	ortLibrary  string
	logger      *slog.Logger
	engineOpts  []engine.Option
	lock        *lock.Lock
	lockOpts    []lock.Option      // for lock.New when no WithLock
	checker     *resources.Checker // nil: resources.NewChecker(checkerOpts...)
	checkerOpts []resources.Option
	noLock      bool
	environ     []string // WithEnv's; nil when the environment is not read
	envWarnings []string
	ortConfig   map[string]string
	variant     string
	exactKV     bool    // WithExactHandover
	strictCUDA  bool    // WithStrictCUDA
	maxBatch    int     // WithMaxBatch; 0 or 1 decodes one stream at a time
	models      *Models // WithModels: the tokenizer comes from here
}

// WithDevice selects the execution provider: "auto" (default: CUDA when it
// works, else the CPU with a warning), "cpu", or "cuda" (fails naming the
// cause when CUDA cannot be used; never runs on the CPU instead).
func WithDevice(device string) Option {
	return func(c *config) { c.device = device }
}

// WithThreads sets the intra-op thread count; 0 leaves it to the model
// folder or the runtime.
func WithThreads(n int) Option {
	return func(c *config) { c.threads = n }
}

// WithORTLibrary names the ONNX Runtime shared library; by default the one
// in the cache that `go run ./internal/cmd/fetch ort` fills.
func WithORTLibrary(path string) Option {
	return func(c *config) { c.ortLibrary = path }
}

// WithLogger sets the logger for load, fallback and engine messages.
// Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithPrefillChunk sets how many prompt tokens go through the model per
// step (default 1024; 0 sends the whole prompt): the same as
// WithEngineOptions(engine.WithPrefillChunk(n)). The memory budget's
// prefill headroom is sized for the chunk the engine options end with,
// however it was set.
func WithPrefillChunk(n int) Option {
	return WithEngineOptions(engine.WithPrefillChunk(n))
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

// WithVariant names the dtype variant of a Hugging Face ONNX export to load,
// as transformers.js names its dtypes: "fp32" (onnx/model.onnx), "fp16",
// "q8" (model_quantized.onnx), "int8", "uint8", "q4", "q4f16" or "bnb4". A
// variant the folder lacks fails the load with an *onnx.VariantError listing
// those present. Unset, Open loads the first variant in the device's
// preference order that fits the memory budget (docs/onnx.md) and logs which
// it picked and which it did not; ModelInfo.Variant reports it.
func WithVariant(name string) Option {
	return func(c *config) { c.variant = name }
}

// WithExactHandover runs ONNX models on the exact present → past KV
// hand-over, skipping the shared buffer and the padded past (and proving
// them at load). Without it Prism uses the fastest strategy the graph
// proves at load; the model's Info().KVCache names the one in use.
func WithExactHandover() Option {
	return func(c *config) { c.exactKV = true }
}

// WithStrictCUDA makes a CUDA load fail, naming the cause, when ONNX
// Runtime would place any node of the graph on the CPU; with device auto
// that failure is a fallback reason like any other. Off by default: the
// CUDA provider leaves small shape computations on the CPU on purpose, so
// most decoder exports are refused (docs/devices.md).
func WithStrictCUDA() Option {
	return func(c *config) { c.strictCUDA = true }
}

// WithMaxBatch lets up to n concurrent streams decode together, one token
// each per runtime step (PRISM_MAX_BATCH with WithEnv): it sets the ONNX
// backend's onnx.Options.MaxBatch, whose proof at load decides whether the
// graph decodes sequences of different lengths together exactly as alone,
// and the engine's engine.WithMaxBatch. The memory budget counts the KV
// cache of n sequences beside the one prompts are prefilled in. 0 and 1,
// the default, run one stream at a time. The model's Info().Batch and
// BatchReason say what the proof found (docs/onnx.md, "Batched decoding").
func WithMaxBatch(n int) Option {
	return func(c *config) { c.maxBatch = n }
}

// WithEngineOptions passes options through to engine.New.
func WithEngineOptions(opts ...engine.Option) Option {
	return func(c *config) { c.engineOpts = append(c.engineOpts, opts...) }
}

// WithLock uses l as the machine-wide load lock instead of one in ~/.prism
// (or PRISM_HOME's directory with WithEnv).
func WithLock(l *lock.Lock) Option {
	return func(c *config) { c.lock = l }
}

// WithChecker uses ch for the memory budget instead of resources.NewChecker
// with the default reserves (or PRISM_RESOURCE_CHECK and the
// PRISM_*_RESERVE_MB reserves with WithEnv).
func WithChecker(ch *resources.Checker) Option {
	return func(c *config) { c.checker = ch }
}

// WithoutLoadLock skips the machine-wide load lock. Only for callers that
// serialise loads themselves; the budget check still runs.
func WithoutLoadLock() Option {
	return func(c *config) { c.noLock = true }
}

func newConfig(opts []Option) (*config, error) {
	// Settings from the environment are the base; the options given to Open
	// are applied over them, whatever their order, so an explicit option
	// always wins.
	var probe config
	for _, o := range opts {
		o(&probe)
	}
	c := &config{device: onnx.DeviceAuto}
	if probe.environ != nil {
		if err := c.applyEnv(probe.environ); err != nil {
			return nil, err
		}
	}
	for _, o := range opts {
		o(c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	for _, w := range c.envWarnings {
		c.logger.Warn("prism: " + w)
	}
	switch c.device {
	case onnx.DeviceAuto, onnx.DeviceCPU, onnx.DeviceCUDA:
	default:
		return nil, fmt.Errorf("unknown device %q: want auto, cpu or cuda", c.device)
	}
	if c.threads < 0 {
		return nil, fmt.Errorf("threads must be 0 or positive, have %d", c.threads)
	}
	if c.maxBatch < 0 {
		return nil, fmt.Errorf("max batch must be 0 or positive, have %d", c.maxBatch)
	}
	// The chunk the engine will use, whichever option set it, is the one
	// the budget plans for.
	c.checkerOpts = append(c.checkerOpts, resources.WithPrefillChunk(engine.PrefillChunk(c.engineOpts...)))
	// The engine's batch is the backend's; an engine.WithMaxBatch among
	// WithEngineOptions comes after, so it still wins for the engine.
	base := []engine.Option{engine.WithLogger(c.logger)}
	if c.maxBatch > 1 {
		base = append(base, engine.WithMaxBatch(c.maxBatch))
	}
	c.engineOpts = append(base, c.engineOpts...)
	return c, nil
}

// Open loads model — a model folder in the onnxruntime-genai or Hugging Face
// optimum layout — and returns a ready engine. It resolves the folder, loads
// its tokenizer (a folder without tokenizer.json loads for requests as
// token ids; see engine.NoTokenizer), takes the machine-wide load lock (spec P2), checks the
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
	load := tokenizer.Load
	if cfg.models != nil {
		load = cfg.models.Tokenizer // the chat layer's, so the grammar's vocabulary is the engine's tokenizer
	}
	tok, err := loadTokenizer(model, dir, load)
	if err != nil {
		return fail(err)
	}

	lk := cfg.lock
	if lk == nil && !cfg.noLock {
		if lk, err = lock.New(cfg.lockOpts...); err != nil {
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
		copts := append([]resources.Option{resources.WithLogger(cfg.logger)}, cfg.checkerOpts...)
		if lk != nil {
			copts = append(copts, resources.WithLock(lk))
		}
		checker = resources.NewChecker(copts...)
	}
	var gpus resources.GPUStatus
	if cfg.device == onnx.DeviceAuto {
		gpus = checker.GPUs()
	}
	budgetDevice := budgetDevice(cfg, gpuVisible(gpus))
	before := checker.Snapshot(budgetDevice != onnx.DeviceCPU)
	plan := resources.Plan{Sequences: max(cfg.maxBatch, 1)}
	if chunk := engine.PrefillChunk(cfg.engineOpts...); chunk > 0 {
		plan.PrefillChunk = chunk // the headroom is for the chunk the engine uses
	}
	variant, picked, err := chooseVariant(ctx, cfg, checker, dir, budgetDevice, plan)
	if err != nil {
		return fail(err)
	}

	backend, err := onnx.Open(ctx, dir, onnx.Options{
		ID: model, Device: loadDevice(cfg, gpus), Threads: cfg.threads, ORTLibrary: cfg.ortLibrary, Logger: cfg.logger,
		SessionConfig: cfg.ortConfig, Variant: variant, VariantPicked: picked, ExactHandover: cfg.exactKV, StrictCUDA: cfg.strictCUDA,
		MaxBatch: cfg.maxBatch,
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
	e, err := engine.New(b, tok, cfg.engineOpts...)
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
		return "", fmt.Errorf("model folder not found: %w", err) // the cause names the path
	}
	if !st.IsDir() {
		return "", fmt.Errorf("model %s is a file; give the folder that holds the graph and its config", model)
	}
	return model, nil
}

// budgetDevice is the device the memory budget is checked for: the device
// the load will use. "auto" is checked as CUDA only when a GPU is visible
// and the runtime has a CUDA provider, since otherwise the load ends on the
// CPU.
func budgetDevice(cfg *config, gpuVisible bool) string {
	if cfg.device != onnx.DeviceAuto {
		return cfg.device
	}
	if !gpuVisible {
		return onnx.DeviceCPU
	}
	if err := onnx.CUDAProvider(cfg.ortLibrary); err != nil {
		cfg.logger.Info("a GPU is visible but the runtime cannot use it: budgeting for the CPU", "cause", err)
		return onnx.DeviceCPU
	}
	return onnx.DeviceCUDA
}

// loadDevice is the device the backend is asked for. "auto" on a machine
// where NVML sees no NVIDIA GPU is the CPU, asked for as such: running on
// the CPU there is the normal case, not a fallback, so there is no CUDA
// attempt to fail and no FallbackReason. A GPU that is visible but that
// the runtime cannot use stays "auto", and the backend's fallback says why.
func loadDevice(cfg *config, gpus resources.GPUStatus) string {
	if cfg.device != onnx.DeviceAuto || gpuVisible(gpus) {
		return cfg.device
	}
	why := "no GPU"
	if gpus.Err != nil {
		why = gpus.Err.Error()
	}
	cfg.logger.Info("no NVIDIA GPU: running on the CPU", "why", why)
	return onnx.DeviceCPU
}

func gpuVisible(gpus resources.GPUStatus) bool { return gpus.Available && len(gpus.Devices) > 0 }

// chooseVariant checks the memory budget and says which dtype variant to
// load and, when the user named none, by what rule it was picked (for the
// backend's load log, which otherwise could not tell Open's pick from the
// user's). A named variant is checked alone. Otherwise the folder's
// variants are tried in the device's preference order and the first that
// fits is loaded, so a folder whose fp32 graph does not fit loads its
// quantized one instead, logged; when none fits, the refusal of the most
// preferred one is returned.
func chooseVariant(ctx context.Context, cfg *config, ch *resources.Checker, dir, device string, plan resources.Plan) (variant, picked string, err error) {
	f, err := modelfolder.Read(dir)
	if err != nil {
		return "", "", err
	}
	choice, err := f.Choose(cfg.variant, device)
	if err != nil {
		return "", "", err
	}
	tries := []string{choice.Variant}
	if !choice.Requested && len(choice.Present) > 1 {
		tries = choice.Present
	}
	var first error
	for _, v := range tries {
		plan.Variant = v
		_, err := ch.Check(ctx, dir, device, plan)
		var refused *resources.InsufficientResourcesError
		if err != nil && !errors.As(err, &refused) {
			return "", "", err
		}
		if err == nil {
			if choice.Requested || v == "" {
				return v, "", nil
			}
			picked = "for " + device + " by the device rule"
			if v != tries[0] {
				picked += ", the first that fits the memory budget"
			}
			cfg.logger.Info("variant picked", "dir", dir, "variant", v, "rule", "first in the "+device+" preference order that fits",
				"present", choice.Present, "not_picked", modelfolder.Others(choice.Present, v))
			return v, picked, nil
		}
		if first == nil {
			first = err
		}
		if len(tries) > 1 {
			cfg.logger.Info("variant does not fit the memory budget", "dir", dir, "variant", v, "cause", err)
		}
	}
	if len(tries) > 1 {
		return "", "", fmt.Errorf("none of the variants present (%s) fits: %w", strings.Join(tries, ", "), first)
	}
	return "", "", first
}

// residentBackend removes the model's resident mark when the backend
// closes. It embeds the concrete backend, not the interface, so that the
// backend's optional capabilities (engine.Verifier, engine.Batcher) stay
// visible to the engine.
type residentBackend struct {
	*onnx.Backend
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
