package resources_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prism-local/prism/resources"
)

// fakeNVML is an NVML with scripted answers; a nil error map entry means
// the call succeeds.
type fakeNVML struct {
	initErr, countErr error
	devices           []resources.GPU
	memErr            map[int]error
	utilErr, tempErr  error
	inited, shutdown  int
	calledBeforeInit  bool
}

func (f *fakeNVML) Init() error {
	if f.initErr != nil {
		return f.initErr
	}
	f.inited++
	return nil
}
func (f *fakeNVML) Shutdown() error { f.shutdown++; return nil }
func (f *fakeNVML) check() {
	if f.inited == 0 {
		f.calledBeforeInit = true
	}
}
func (f *fakeNVML) DriverVersion() (string, error) { f.check(); return "580.1", nil }
func (f *fakeNVML) DeviceCount() (int, error)      { f.check(); return len(f.devices), f.countErr }
func (f *fakeNVML) DeviceName(i int) (string, error) {
	f.check()
	return f.devices[i].Name, nil
}
func (f *fakeNVML) DeviceMemory(i int) (uint64, uint64, uint64, error) {
	f.check()
	if err := f.memErr[i]; err != nil {
		return 0, 0, 0, err
	}
	g := f.devices[i]
	return g.TotalBytes, g.UsedBytes, g.FreeBytes, nil
}
func (f *fakeNVML) DeviceUtilization(i int) (uint32, error) {
	f.check()
	return uint32(f.devices[i].UtilizationPercent), f.utilErr
}
func (f *fakeNVML) DeviceTemperature(i int) (uint32, error) {
	f.check()
	return uint32(f.devices[i].TemperatureC), f.tempErr
}

func gpu(i int, name string, totalMiB, usedMiB uint64) resources.GPU {
	return resources.GPU{Index: i, Name: name, TotalBytes: totalMiB * resources.MiB, UsedBytes: usedMiB * resources.MiB,
		FreeBytes: (totalMiB - usedMiB) * resources.MiB, UtilizationPercent: 7, TemperatureC: 45}
}

func TestReadGPUs(t *testing.T) {
	notSupported := errors.New("not supported")
	tests := []struct {
		name      string
		nvml      *fakeNVML
		available bool
		devices   int
		cause     string
		problems  int
	}{
		{name: "two devices", nvml: &fakeNVML{devices: []resources.GPU{gpu(0, "RTX 4090", 24564, 1024), gpu(1, "RTX 3060", 12288, 11000)}}, available: true, devices: 2},
		{name: "library missing", nvml: &fakeNVML{initErr: errors.New("libnvidia-ml.so.1 not found")}, cause: "libnvidia-ml.so.1 not found"},
		{name: "no gpu", nvml: &fakeNVML{}, cause: "no NVIDIA GPU detected"},
		{name: "count fails", nvml: &fakeNVML{countErr: errors.New("driver gone"), devices: []resources.GPU{gpu(0, "x", 1, 0)}}, cause: "driver gone"},
		{name: "one device unreadable", nvml: &fakeNVML{devices: []resources.GPU{gpu(0, "a", 8192, 0), gpu(1, "b", 8192, 0)}, memErr: map[int]error{0: errors.New("gpu is lost")}}, available: true, devices: 1, cause: ""},
		{name: "all devices unreadable", nvml: &fakeNVML{devices: []resources.GPU{gpu(0, "a", 8192, 0)}, memErr: map[int]error{0: errors.New("gpu is lost")}}, cause: "gpu is lost"},
		{name: "no utilisation or temperature", nvml: &fakeNVML{devices: []resources.GPU{gpu(0, "a", 8192, 0)}, utilErr: notSupported, tempErr: notSupported}, available: true, devices: 1, problems: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := resources.ReadGPUs(tt.nvml)
			if st.Available != tt.available || len(st.Devices) != tt.devices {
				t.Fatalf("status %+v", st)
			}
			if tt.nvml.calledBeforeInit {
				t.Fatal("device queried without a successful Init")
			}
			if tt.nvml.inited != tt.nvml.shutdown {
				t.Fatalf("init %d, shutdown %d", tt.nvml.inited, tt.nvml.shutdown)
			}
			if !tt.available {
				if !errors.Is(st.Err, resources.ErrGPUUnavailable) || !strings.Contains(st.Cause(), tt.cause) {
					t.Fatalf("cause %q, want it to contain %q and wrap ErrGPUUnavailable", st.Cause(), tt.cause)
				}
				return
			}
			if st.Cause() != "" {
				t.Fatalf("available but cause %q", st.Cause())
			}
			if tt.problems > 0 {
				g := st.Devices[0]
				if len(g.Problems) != tt.problems || g.UtilizationPercent != -1 || g.TemperatureC != -1 {
					t.Fatalf("device %+v", g)
				}
				if strings.Contains(g.String(), "busy") || strings.Contains(g.String(), "°C") {
					t.Fatalf("unknown readings printed: %s", g)
				}
			}
		})
	}
}

func TestGPUStringAndLowVRAM(t *testing.T) {
	g := gpu(1, "NVIDIA RTX 3060", 12288, 11000)
	if got := g.String(); got != "GPU #1 NVIDIA RTX 3060: VRAM 11000 / 12288 MiB used, 1288 MiB free, 7% busy, 45°C" {
		t.Fatalf("String() = %q", got)
	}
	if !g.LowVRAM(1536) || g.LowVRAM(1000) {
		t.Fatal("LowVRAM threshold wrong")
	}
	w := g.LowVRAMWarning(1536)
	for _, want := range []string{"GPU #1", "11000 / 12288 MiB used", "1288 MiB free", "1536 MiB", "POST /v1/unload"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
}

// TestSystemNVML exercises the real binding. Without an NVIDIA GPU it must
// report "unavailable" with the cause instead of crashing.
func TestSystemNVML(t *testing.T) {
	st := resources.ReadGPUs(resources.SystemNVML())
	if !st.Available {
		if !errors.Is(st.Err, resources.ErrGPUUnavailable) || st.Cause() == "" {
			t.Fatalf("unavailable without a cause: %+v", st)
		}
		t.Skipf("no NVIDIA GPU on this machine, real NVML not exercised beyond Init: %s", st.Cause())
	}
	for _, g := range st.Devices {
		if g.TotalBytes == 0 || g.FreeBytes > g.TotalBytes || g.Name == "" {
			t.Errorf("implausible device %+v", g)
		}
		t.Log(g)
	}
}
