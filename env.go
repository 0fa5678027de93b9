package prism

import (
	"slices"

	"github.com/prism-local/prism/engine"
	settings "github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/internal/ortlib"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

// WithEnv makes Open take its PRISM_* settings from environ: KEY=VALUE
// entries as os.Environ returns them, plus the file PRISM_ENV_FILE names
// when environ sets it. Without WithEnv, Open reads no environment at all;
// with it, Open reads environ and nothing else (spec P15):
//
//	e, err := prism.Open(ctx, dir, prism.WithEnv(os.Environ()))
//
// Every malformed value is reported at once, in one error naming each
// variable and the form it accepts; none is replaced by its default. PRISM_*
// names Prism does not know are logged as warnings, with the nearest known
// name. Options given to Open win over the environment, whatever their
// order; a later WithEnv replaces an earlier one. docs/getting-started.md
// lists the variables.
func WithEnv(environ []string) Option {
	environ = slices.Clip(slices.Clone(environ))
	if environ == nil {
		environ = []string{}
	}
	return func(c *config) { c.environ = environ }
}

// applyEnv loads the settings in environ and makes them c's base values:
// the one place PRISM_* settings become library options.
func (c *config) applyEnv(environ []string) error {
	s, err := settings.Load(environ)
	if err != nil {
		return err
	}
	c.envWarnings = s.Warnings
	c.device, c.threads = s.Device, s.Threads
	c.ortLibrary = s.ORTLib
	if c.ortLibrary == "" && s.CacheDir != "" {
		c.ortLibrary = ortlib.InCache(s.CacheDir)
	}
	c.engineOpts = append(c.engineOpts, engine.WithPrefillChunk(s.PrefillChunk))
	if !s.Speculate {
		c.engineOpts = append(c.engineOpts, engine.WithSpeculation(false))
	}
	c.maxBatch = s.MaxBatch // WithMaxBatch
	if !s.LoopGuard {
		c.engineOpts = append(c.engineOpts, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	}
	c.lockOpts = []lock.Option{lock.WithDir(s.Home), lock.WithTimeout(s.LoadTimeout)}
	c.checkerOpts = []resources.Option{
		resources.WithEnabled(s.ResourceCheck),
		resources.WithReserves(resources.Reserves{RAM: uint64(s.RAMReserveMB * resources.MiB), VRAM: uint64(s.VRAMReserveMB * resources.MiB)}),
	}
	c.variant = s.Variant               // WithVariant
	c.exactKV = s.KVHandover == "exact" // WithExactHandover
	c.strictCUDA = s.StrictCUDA         // WithStrictCUDA
	return nil
}
