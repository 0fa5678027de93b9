package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/prism-local/prism/engine/onnx"
	settings "github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/internal/ortlib"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

// Line markers.
const (
	markOK   = "[ok]"
	markNo   = "[--]"
	markWarn = "[!!]"
)

// report writes the diagnosis, one finding per line.
type report struct {
	w io.Writer
}

func (r report) line(mark, format string, args ...any) {
	fmt.Fprintf(r.w, "%s %s\n", mark, fmt.Sprintf(format, args...))
}

func (r report) detail(format string, args ...any) {
	fmt.Fprintf(r.w, "     %s\n", fmt.Sprintf(format, args...))
}

// diagnose prints every finding to w and the low-VRAM and WSL warnings as
// log records to logger. It reads, never writes (lock.Residents may delete
// the marks of dead processes, as in every Prism process).
func diagnose(ctx context.Context, cfg config, w io.Writer, logger *slog.Logger) {
	r := report{w: w}
	gpus := resources.ReadGPUs(resources.SystemNVML())

	checkSettings(r, cfg)
	checkRuntime(r, cfg, gpus)
	checkGPUs(ctx, r, cfg, gpus, logger)
	checkMemory(r, cfg)
	checkLock(r, cfg)
	checkModels(r, cfg)
	checkOllama(ctx, r, cfg)
	checkWSL(ctx, r, cfg, logger)
}

// checkSettings reports every malformed PRISM_* value and every warning of
// the settings (unknown names, ignored lines of the settings file).
func checkSettings(r report, cfg config) {
	s := cfg.settings
	var bad *settings.Error
	if errors.As(cfg.settingsErr, &bad) {
		for _, p := range bad.Problems {
			r.line(markWarn, "setting %s; Prism programs refuse to start with it (the checks below use the default)", p)
		}
	} else if cfg.settingsErr != nil {
		r.line(markWarn, "settings: %v", cfg.settingsErr)
	}
	for _, w := range s.Warnings {
		r.line(markWarn, "setting: %s", w)
	}
	if cfg.settingsErr == nil && len(s.Warnings) == 0 {
		from := "the environment"
		if s.EnvFile != "" {
			from += " and " + s.EnvFile
		}
		r.line(markOK, "PRISM_* settings from %s: valid", from)
	}
}

func checkRuntime(r report, cfg config, gpus resources.GPUStatus) {
	lib, from := cfg.ortLib, ortlib.FromOption
	if lib == "" {
		lib, from = cfg.settings.ORTLib, ortlib.FromEnv
	}
	path, src, err := ortlib.Find(lib, from, cfg.settings.CacheDir)
	if err != nil {
		r.line(markNo, "ONNX Runtime: %v", err)
		r.line(markNo, "providers: none (no runtime library)")
		return
	}
	version, how := libraryVersion(path)
	switch {
	case version == "":
		r.line(markWarn, "ONNX Runtime: %s (from %s); version unknown, Prism is built for %s", path, src, ortlib.Version)
	case version != ortlib.Version:
		r.line(markWarn, "ONNX Runtime %s: %s (from %s, version from %s); Prism is built for %s", version, path, src, how, ortlib.Version)
	default:
		r.line(markOK, "ONNX Runtime %s: %s (from %s, version from %s)", version, path, src, how)
	}
	causes := cudaCauses(path, libSearchPath(cfg.getenv))
	if !gpus.Available {
		causes = append(causes, "no usable NVIDIA GPU: "+gpus.Cause())
	}
	if len(causes) == 0 {
		r.line(markOK, "providers: cpu, cuda")
		return
	}
	r.line(markOK, "providers: cpu")
	r.line(markNo, "cuda provider unavailable:")
	for _, c := range causes {
		r.detail("- %s", c)
	}
}

// libraryVersion asks the library at path for its version (the C API's
// version string), loading it as Prism's programs do; where it cannot be
// loaded, the files around it may still say (runtimeVersion).
func libraryVersion(path string) (version, how string) {
	if v, err := onnx.LoadRuntime(path); err == nil && v != "" {
		return v, "the library"
	}
	return runtimeVersion(path)
}

func checkGPUs(ctx context.Context, r report, cfg config, gpus resources.GPUStatus, logger *slog.Logger) {
	if !gpus.Available {
		r.line(markNo, "GPU: NVML unavailable: %s", strings.TrimPrefix(gpus.Cause(), resources.ErrGPUUnavailable.Error()+": "))
		return
	}
	driver := gpus.Driver
	if driver == "" {
		driver = "unknown"
	}
	r.line(markOK, "NVML: driver %s, %d GPU(s)", driver, len(gpus.Devices))
	threshold := cfg.settings.VRAMReserveMB // the budget's reserve (spec P17)
	for _, g := range gpus.Devices {
		mark := markOK
		if g.LowVRAM(threshold) {
			mark = markWarn
			logger.WarnContext(ctx, g.LowVRAMWarning(threshold), "gpu", g.Index, "vram_used_mb", int(g.UsedMiB()),
				"vram_total_mb", int(g.TotalMiB()), "vram_free_mb", int(g.FreeMiB()), "threshold_mb", threshold)
		}
		r.line(mark, "%s", g)
	}
	if gpus.Err != nil {
		r.line(markWarn, "some GPUs could not be read: %v", gpus.Err)
	}
}

func checkMemory(r report, cfg config) {
	m, err := resources.ReadMemory()
	if err != nil {
		r.line(markNo, "RAM: %v", err)
	} else {
		est := ""
		if m.AvailableEstimated {
			est = " (estimated: this kernel has no MemAvailable)"
		}
		r.line(markOK, "RAM: %.1f GiB available of %.1f GiB%s; swap %.1f GiB free of %.1f GiB",
			gib(m.Available), gib(m.Total), est, gib(m.SwapFree), gib(m.SwapTotal))
	}
	s := cfg.settings
	c := resources.NewChecker(resources.WithEnabled(s.ResourceCheck), resources.WithPrefillChunk(s.PrefillChunk),
		resources.WithReserves(resources.Reserves{RAM: uint64(s.RAMReserveMB * resources.MiB), VRAM: uint64(s.VRAMReserveMB * resources.MiB)}),
		resources.WithLogger(slog.New(slog.DiscardHandler)))
	if !c.Enabled() {
		r.line(markWarn, "memory budget disabled (%s=off): loads are not checked against free memory", resources.EnvResourceCheck)
		return
	}
	res := c.Reserves()
	chunk := fmt.Sprintf("prefill chunk %d tokens", c.PrefillChunk())
	if c.PrefillChunk() == 0 {
		chunk = "whole-prompt prefill (PRISM_PREFILL_CHUNK=0)"
	}
	r.line(markOK, "memory budget on: reserves %.0f MiB RAM, %.0f MiB VRAM; %s",
		float64(res.RAM)/resources.MiB, float64(res.VRAM)/resources.MiB, chunk)
}

func checkLock(r report, cfg config) {
	lk, err := lock.New(lock.WithDir(cfg.settings.Home), lock.WithTimeout(cfg.settings.LoadTimeout))
	if err != nil {
		r.line(markWarn, "load lock: %v", err)
		return
	}
	h, held, err := lk.Holder()
	switch {
	case err != nil:
		r.line(markWarn, "load lock %s: %v", lk.Path(), err)
	case !held:
		r.line(markOK, "load lock %s: free (wait limit %s)", lk.Path(), lk.Timeout())
	case h == nil:
		r.line(markOK, "load lock %s: held by a process that is loading a model", lk.Path())
	default:
		r.line(markOK, "load lock %s: held by %s since %s", lk.Path(), h, h.Since.Local().Format("15:04:05"))
	}
	residents, err := lk.Residents()
	if err == nil {
		for _, res := range residents {
			r.line(markOK, "resident model: %s", res)
		}
	}
}

func checkModels(r report, cfg config) {
	found, err := findModels(cfg.modelsDir)
	if err != nil {
		r.line(markNo, "models in %s: %v", cfg.modelsDir, err)
		return
	}
	if len(found) == 0 {
		r.line(markNo, "models in %s: no model folders (genai_config.json, or config.json with model.onnx or onnx/model.onnx)", cfg.modelsDir)
		return
	}
	r.line(markOK, "models in %s: %d", cfg.modelsDir, len(found))
	for _, m := range found {
		rel, err := filepath.Rel(cfg.modelsDir, m.dir)
		if err != nil || rel == "." {
			rel = m.dir
		}
		r.detail("- %s (%s, %.2f GiB of weights)", rel, m.layout, gib(m.weights))
	}
}

func gib(n uint64) float64 { return float64(n) / (1 << 30) }
