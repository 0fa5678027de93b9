package resources

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prism-local/prism/lock"
)

// Names of the settings a refusal's advice points at. Checker reads no
// environment; the edge's configuration maps these variables onto
// WithReserves, WithEnabled and WithPrefillChunk.
const (
	// EnvResourceCheck set to off disables the budget (WithEnabled).
	EnvResourceCheck = "PRISM_RESOURCE_CHECK"
	// EnvVRAMReserve is the VRAM kept free, in MiB (WithReserves).
	EnvVRAMReserve = "PRISM_VRAM_RESERVE_MB"
	// EnvRAMReserve is the RAM kept free, in MiB (WithReserves).
	EnvRAMReserve = "PRISM_RAM_RESERVE_MB"
)

// Checker runs the budget against this machine. Build one with NewChecker;
// it is safe for concurrent use.
type Checker struct {
	enabled      bool
	reserves     Reserves
	prefillChunk int
	nvml         NVML
	memory       func() (Memory, error)
	holders      func() *lock.Holder
	logger       *slog.Logger
}

// Option configures NewChecker.
type Option func(*checkerConfig)

type checkerConfig struct {
	nvml         NVML
	memory       func() (Memory, error)
	holders      func() *lock.Holder
	reserves     Reserves
	enabled      bool
	prefillChunk int
	logger       *slog.Logger
}

// WithNVML replaces SystemNVML (fakes in tests, another binding).
func WithNVML(n NVML) Option { return func(c *checkerConfig) { c.nvml = n } }

// WithMemoryReader replaces ReadMemory.
func WithMemoryReader(f func() (Memory, error)) Option {
	return func(c *checkerConfig) { c.memory = f }
}

// WithLock names, in refusals, another Prism process that holds memory, as
// l.OtherHolder reports it. A nil l names nobody.
func WithLock(l *lock.Lock) Option {
	return func(c *checkerConfig) {
		if l != nil {
			c.holders = l.OtherHolder
		}
	}
}

// WithHolderFunc is WithLock for any source of the holder.
func WithHolderFunc(f func() *lock.Holder) Option {
	return func(c *checkerConfig) { c.holders = f }
}

// WithReserves sets the memory kept free (default DefaultReserves();
// PRISM_RAM_RESERVE_MB and PRISM_VRAM_RESERVE_MB at the edge).
func WithReserves(r Reserves) Option { return func(c *checkerConfig) { c.reserves = r } }

// WithEnabled turns the budget on or off (default on; PRISM_RESOURCE_CHECK
// at the edge).
func WithEnabled(on bool) Option { return func(c *checkerConfig) { c.enabled = on } }

// WithPrefillChunk sets the prefill chunk the headroom is sized for when a
// Plan gives none (default DefaultPrefillChunk); 0 means the whole prompt in
// one step, as the engine's WithPrefillChunk(0) does. A negative n keeps the
// default.
func WithPrefillChunk(n int) Option {
	return func(c *checkerConfig) {
		if n >= 0 {
			c.prefillChunk = n
		}
	}
}

// WithLogger sets the logger for skipped checks and configuration
// warnings (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *checkerConfig) { c.logger = l } }

// NewChecker returns a Checker with the given options; the zero set is the
// budget on, DefaultReserves and DefaultPrefillChunk, against this machine's
// memory and GPUs. It reads no environment.
func NewChecker(opts ...Option) *Checker {
	cfg := checkerConfig{enabled: true, reserves: DefaultReserves(), prefillChunk: DefaultPrefillChunk}
	for _, o := range opts {
		o(&cfg)
	}
	c := &Checker{enabled: cfg.enabled, reserves: cfg.reserves, prefillChunk: cfg.prefillChunk,
		nvml: cfg.nvml, memory: cfg.memory, holders: cfg.holders, logger: cfg.logger}
	if c.nvml == nil {
		c.nvml = SystemNVML()
	}
	if c.memory == nil {
		c.memory = ReadMemory
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}

// LowVRAM reports whether g has less free VRAM than thresholdMB.
func (g GPU) LowVRAM(thresholdMB float64) bool { return g.FreeMiB() < thresholdMB }

// LowVRAMWarning is the P17 warning for g: the device, its live used /
// total / free MiB, the threshold and the next step.
func (g GPU) LowVRAMWarning(thresholdMB float64) string {
	return fmt.Sprintf("GPU #%d has low free VRAM: %.0f / %.0f MiB used, %.0f MiB free, below the %.0f MiB threshold (%s); release the resident ONNX model with POST /v1/unload to recover headroom",
		g.Index, g.UsedMiB(), g.TotalMiB(), g.FreeMiB(), thresholdMB, EnvVRAMReserve)
}

// Enabled reports whether the budget is on.
func (c *Checker) Enabled() bool { return c.enabled }

// Reserves are the reserves in force.
func (c *Checker) Reserves() Reserves { return c.reserves }

// PrefillChunk is the prefill chunk in force; 0 means the whole prompt in
// one step (as with the engine's WithPrefillChunk(0)), and the prefill
// headroom then covers the whole planned length.
func (c *Checker) PrefillChunk() int { return c.prefillChunk }

// Readings measures free RAM, and GPU telemetry when withGPU is set.
func (c *Checker) Readings(withGPU bool) Readings {
	var r Readings
	r.Memory, r.MemoryErr = c.memory()
	if withGPU {
		r.GPUs = ReadGPUs(c.nvml)
	}
	return r
}

// GPUs reads GPU telemetry.
func (c *Checker) GPUs() GPUStatus { return ReadGPUs(c.nvml) }

// Check estimates what the model in dir needs on device and decides whether
// it fits (spec P1). It must run under the load lock, before the runtime's
// loader is called (P3). A refusal is returned as the error, an
// *InsufficientResourcesError; other errors (unreadable folder, bad device)
// are returned as they are. Skipped checks are logged at warn. With the
// budget disabled it returns Decision{Disabled: true} without measuring.
func (c *Checker) Check(ctx context.Context, dir, device string, plan Plan) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	if !c.enabled {
		c.logger.InfoContext(ctx, "resources: budget check disabled", "env", EnvResourceCheck+"=off", "model", dir)
		return Decision{Disabled: true}, nil
	}
	if plan.PrefillChunk <= 0 {
		plan.PrefillChunk = c.prefillChunk
	}
	est, err := estimateModel(dir, device, plan, plan.PrefillChunk <= 0)
	if err != nil {
		return Decision{}, err
	}
	dev, _ := ParseDevice(device)
	d := Decide(est, c.Readings(dev.CUDA), c.reserves, nil)
	for _, s := range d.Skipped {
		c.logger.WarnContext(ctx, "resources: "+s, "model", dir, "device", est.Device)
	}
	if err := d.Err(); err != nil {
		if c.holders != nil {
			d.Holder = c.holders()
		}
		return d, d.Err()
	}
	return d, nil
}
