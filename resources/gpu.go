package resources

import (
	"errors"
	"fmt"
)

// NVML is the part of the NVIDIA Management Library this package uses. The
// real binding is SystemNVML; tests and callers on other hardware can pass
// their own. Device methods are only called between a successful Init and
// Shutdown.
type NVML interface {
	// Init loads and initialises the library.
	Init() error
	// Shutdown releases what Init took.
	Shutdown() error
	// DriverVersion is the NVIDIA driver's version string.
	DriverVersion() (string, error)
	// DeviceCount is the number of visible GPUs.
	DeviceCount() (int, error)
	// DeviceName is the product name of GPU i.
	DeviceName(i int) (string, error)
	// DeviceMemory is GPU i's VRAM in bytes.
	DeviceMemory(i int) (total, used, free uint64, err error)
	// DeviceUtilization is GPU i's compute utilisation in percent.
	DeviceUtilization(i int) (percent uint32, err error)
	// DeviceTemperature is GPU i's core temperature in degrees Celsius.
	DeviceTemperature(i int) (celsius uint32, err error)
}

// ErrGPUUnavailable is wrapped by every reason GPU telemetry cannot be read
// (no cgo, no NVIDIA driver, no GPU).
var ErrGPUUnavailable = errors.New("gpu telemetry unavailable")

// GPU is one device's telemetry.
type GPU struct {
	// Index is the NVML device index (cuda:N).
	Index int
	// Name is the product name, e.g. "NVIDIA GeForce RTX 4090".
	Name string
	// TotalBytes, UsedBytes and FreeBytes describe VRAM.
	TotalBytes, UsedBytes, FreeBytes uint64
	// UtilizationPercent is compute utilisation, -1 when unknown.
	UtilizationPercent int
	// TemperatureC is the core temperature, -1 when unknown.
	TemperatureC int
	// Problems lists readings that failed (utilisation, temperature);
	// memory failures leave the device out instead.
	Problems []string
}

// MiB is 2^20 bytes.
const MiB = 1 << 20

// TotalMiB is TotalBytes in MiB.
func (g GPU) TotalMiB() float64 { return float64(g.TotalBytes) / MiB }

// UsedMiB is UsedBytes in MiB.
func (g GPU) UsedMiB() float64 { return float64(g.UsedBytes) / MiB }

// FreeMiB is FreeBytes in MiB.
func (g GPU) FreeMiB() float64 { return float64(g.FreeBytes) / MiB }

// String is the one-line form `prism doctor` prints:
// "GPU #0 NVIDIA RTX 4090: VRAM 1024 / 24564 MiB used, 23540 MiB free, 3% busy, 41°C".
func (g GPU) String() string {
	s := fmt.Sprintf("GPU #%d %s: VRAM %.0f / %.0f MiB used, %.0f MiB free", g.Index, g.Name, g.UsedMiB(), g.TotalMiB(), g.FreeMiB())
	if g.UtilizationPercent >= 0 {
		s += fmt.Sprintf(", %d%% busy", g.UtilizationPercent)
	}
	if g.TemperatureC >= 0 {
		s += fmt.Sprintf(", %d°C", g.TemperatureC)
	}
	return s
}

// GPUStatus is what ReadGPUs found.
type GPUStatus struct {
	// Available is true when NVML answered and at least one GPU was read.
	Available bool
	// Err says why telemetry is unavailable (wraps ErrGPUUnavailable), or
	// names devices that could not be read when some could.
	Err error
	// Driver is the NVIDIA driver version, when known.
	Driver string
	// Devices holds one entry per GPU whose memory could be read.
	Devices []GPU
}

// Device returns GPU index, if it was read.
func (s GPUStatus) Device(index int) (GPU, bool) {
	for _, g := range s.Devices {
		if g.Index == index {
			return g, true
		}
	}
	return GPU{}, false
}

// Cause is the reason telemetry is unavailable, "" when it is available.
func (s GPUStatus) Cause() string {
	if s.Available || s.Err == nil {
		return ""
	}
	return s.Err.Error()
}

// ReadGPUs initialises lib, reads every device and shuts lib down again. It
// never panics on a missing library or GPU: those come back as an
// unavailable status whose Err names the cause.
func ReadGPUs(lib NVML) (st GPUStatus) {
	if lib == nil {
		return GPUStatus{Err: fmt.Errorf("%w: no NVML binding", ErrGPUUnavailable)}
	}
	if err := lib.Init(); err != nil {
		return GPUStatus{Err: fmt.Errorf("%w: %w", ErrGPUUnavailable, err)}
	}
	defer lib.Shutdown()
	st.Driver, _ = lib.DriverVersion()
	n, err := lib.DeviceCount()
	if err != nil {
		st.Err = fmt.Errorf("%w: counting devices: %w", ErrGPUUnavailable, err)
		return st
	}
	if n <= 0 {
		st.Err = fmt.Errorf("%w: no NVIDIA GPU detected", ErrGPUUnavailable)
		return st
	}
	var failed []error
	for i := range n {
		total, used, free, err := lib.DeviceMemory(i)
		if err != nil {
			failed = append(failed, fmt.Errorf("GPU #%d memory: %w", i, err))
			continue
		}
		g := GPU{Index: i, TotalBytes: total, UsedBytes: used, FreeBytes: free, UtilizationPercent: -1, TemperatureC: -1}
		if name, err := lib.DeviceName(i); err == nil {
			g.Name = name
		} else {
			g.Name = "unknown"
			g.Problems = append(g.Problems, "name: "+err.Error())
		}
		if u, err := lib.DeviceUtilization(i); err == nil {
			g.UtilizationPercent = int(min(u, 100))
		} else {
			g.Problems = append(g.Problems, "utilisation: "+err.Error())
		}
		if c, err := lib.DeviceTemperature(i); err == nil {
			g.TemperatureC = int(min(c, 1000))
		} else {
			g.Problems = append(g.Problems, "temperature: "+err.Error())
		}
		st.Devices = append(st.Devices, g)
	}
	st.Available = len(st.Devices) > 0
	if len(failed) > 0 {
		err := errors.Join(failed...)
		if !st.Available {
			err = fmt.Errorf("%w: %w", ErrGPUUnavailable, err)
		}
		st.Err = err
	}
	return st
}
