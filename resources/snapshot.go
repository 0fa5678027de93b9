package resources

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// Snapshot is the machine's memory at one moment, taken before and after a
// load so the load can log what it took (spec P5).
type Snapshot struct {
	// At is when the snapshot was taken.
	At time.Time
	// Memory is host memory.
	Memory Memory
	// MemoryErr says why host memory could not be read; nil when it was.
	MemoryErr error
	// GPUs is the GPU telemetry (empty when not asked for).
	GPUs GPUStatus
}

// Snapshot measures RAM and, when withGPU is set, VRAM now.
func (c *Checker) Snapshot(withGPU bool) Snapshot {
	r := c.Readings(withGPU)
	return Snapshot{At: time.Now(), Memory: r.Memory, MemoryErr: r.MemoryErr, GPUs: r.GPUs}
}

// DeviceDelta is how much more VRAM one GPU uses.
type DeviceDelta struct {
	// Index is the NVML device index (cuda:N).
	Index int
	// Name is the device's product name.
	Name string
	// Bytes is used-after minus used-before (negative when memory was freed).
	Bytes int64
}

// Delta is the difference between two snapshots.
type Delta struct {
	// Elapsed is the time between the two snapshots.
	Elapsed time.Duration
	// RAMKnown is false when either snapshot lacks host memory.
	RAMKnown bool
	// RAMBytes is the drop in available host memory (positive: the load
	// took memory).
	RAMBytes int64
	// VRAM has one entry per GPU present in both snapshots.
	VRAM []DeviceDelta
}

// Sub is what changed from before to s.
func (s Snapshot) Sub(before Snapshot) Delta {
	d := Delta{Elapsed: s.At.Sub(before.At)}
	if s.MemoryErr == nil && before.MemoryErr == nil && s.Memory.Total > 0 && before.Memory.Total > 0 {
		d.RAMKnown = true
		d.RAMBytes = int64(before.Memory.Available) - int64(s.Memory.Available)
	}
	for _, g := range s.GPUs.Devices {
		if b, ok := before.GPUs.Device(g.Index); ok {
			d.VRAM = append(d.VRAM, DeviceDelta{Index: g.Index, Name: g.Name, Bytes: int64(g.UsedBytes) - int64(b.UsedBytes)})
		}
	}
	return d
}

// LogValue renders the delta for slog: ram_mib, vram_mib_cuda_N, elapsed.
func (d Delta) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Duration("elapsed", d.Elapsed)}
	if d.RAMKnown {
		attrs = append(attrs, slog.Float64("ram_mib", float64(d.RAMBytes)/MiB))
	} else {
		attrs = append(attrs, slog.String("ram_mib", "unknown"))
	}
	for _, v := range d.VRAM {
		attrs = append(attrs, slog.Float64("vram_mib_cuda_"+strconv.Itoa(v.Index), float64(v.Bytes)/MiB))
	}
	return slog.GroupValue(attrs...)
}

// LogLoad logs, at info, what loading model took: the RAM and VRAM delta
// between before and after (spec P5: parallel use is diagnosed from these).
func LogLoad(ctx context.Context, logger *slog.Logger, model, device string, before, after Snapshot) {
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "load memory", slog.String("model", model), slog.String("device", device),
		slog.Any("memory_delta", after.Sub(before)))
}
