package resources

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/prism-local/prism/lock"
)

// Environment variables read by NewChecker.
const (
	// EnvResourceCheck set to "off" (or "0", "false", "no") disables the budget.
	EnvResourceCheck = "PRISM_RESOURCE_CHECK"
	// EnvVRAMReserve is the VRAM kept free, in MiB (default 1536).
	EnvVRAMReserve = "PRISM_VRAM_RESERVE_MB"
	// EnvRAMReserve is the RAM kept free, in MiB (default 2048).
	EnvRAMReserve = "PRISM_RAM_RESERVE_MB"
	// EnvPrefillChunk is the prefill chunk in tokens (default 1024).
	EnvPrefillChunk = "PRISM_PREFILL_CHUNK"
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
	warnings     []string
}

// Option configures NewChecker.
type Option func(*checkerConfig)

type checkerConfig struct {
	getenv   func(string) string
	nvml     NVML
	memory   func() (Memory, error)
	holders  func() *lock.Holder
	reserves *Reserves
	enabled  *bool
	logger   *slog.Logger
}

// WithGetenv replaces os.Getenv for the PRISM_* variables.
func WithGetenv(getenv func(string) string) Option {
	return func(c *checkerConfig) { c.getenv = getenv }
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

// WithReserves overrides the PRISM_*_RESERVE_MB reserves.
func WithReserves(r Reserves) Option { return func(c *checkerConfig) { c.reserves = &r } }

// WithEnabled overrides PRISM_RESOURCE_CHECK.
func WithEnabled(on bool) Option { return func(c *checkerConfig) { c.enabled = &on } }

// WithLogger sets the logger for skipped checks and configuration
// warnings (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *checkerConfig) { c.logger = l } }

// NewChecker reads PRISM_RESOURCE_CHECK, PRISM_VRAM_RESERVE_MB,
// PRISM_RAM_RESERVE_MB and PRISM_PREFILL_CHUNK. As spec P17 requires, an
// empty or malformed value falls back to the default; the fallback is not
// silent: it is logged and listed by Warnings.
func NewChecker(opts ...Option) *Checker {
	cfg := checkerConfig{getenv: os.Getenv}
	for _, o := range opts {
		o(&cfg)
	}
	c := &Checker{enabled: true, nvml: cfg.nvml, memory: cfg.memory, holders: cfg.holders, logger: cfg.logger}
	if c.nvml == nil {
		c.nvml = SystemNVML()
	}
	if c.memory == nil {
		c.memory = ReadMemory
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if cfg.enabled != nil {
		c.enabled = *cfg.enabled
	} else {
		switch v := strings.ToLower(strings.TrimSpace(cfg.getenv(EnvResourceCheck))); v {
		case "", "on", "1", "true", "yes":
		case "off", "0", "false", "no":
			c.enabled = false
		default:
			c.warnings = append(c.warnings, fmt.Sprintf("%s=%q is not on or off; the check stays on", EnvResourceCheck, v))
		}
	}
	if cfg.reserves != nil {
		c.reserves = *cfg.reserves
	} else {
		ram, w1 := envMB(cfg.getenv, EnvRAMReserve, DefaultRAMReserveMB)
		vram, w2 := envMB(cfg.getenv, EnvVRAMReserve, DefaultVRAMReserveMB)
		c.reserves = Reserves{RAM: uint64(ram * MiB), VRAM: uint64(vram * MiB)}
		c.warnings = append(c.warnings, w1...)
		c.warnings = append(c.warnings, w2...)
	}
	c.prefillChunk = DefaultPrefillChunk
	if v := strings.TrimSpace(cfg.getenv(EnvPrefillChunk)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			c.warnings = append(c.warnings, fmt.Sprintf("%s=%q is not a whole number >= 0; using %d", EnvPrefillChunk, v, DefaultPrefillChunk))
		} else {
			c.prefillChunk = n
		}
	}
	for _, w := range c.warnings {
		c.logger.Warn("resources: " + w)
	}
	return c
}

// envMB reads a non-negative MiB value, falling back to def with a warning.
func envMB(getenv func(string) string, name string, def float64) (float64, []string) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1<<40 {
		return def, []string{fmt.Sprintf("%s=%q is not a number of MiB >= 0; using %g", name, v, def)}
	}
	return f, nil
}

// LowVRAMThresholdMB is the free-VRAM level below which `prism doctor`
// warns (spec P17): PRISM_VRAM_RESERVE_MB read the same way the budget reads
// it, with the default for an empty or malformed value. getenv nil means
// os.Getenv.
func LowVRAMThresholdMB(getenv func(string) string) float64 {
	if getenv == nil {
		getenv = os.Getenv
	}
	mb, _ := envMB(getenv, EnvVRAMReserve, DefaultVRAMReserveMB)
	return mb
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
// one step (PRISM_PREFILL_CHUNK=0, as the engine reads it), and the prefill
// headroom then covers the whole planned length.
func (c *Checker) PrefillChunk() int { return c.prefillChunk }

// Warnings lists configuration values that were malformed and replaced by
// defaults.
func (c *Checker) Warnings() []string { return append([]string(nil), c.warnings...) }

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
