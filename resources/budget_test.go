package resources_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

const GiB = 1 << 30

func estimate(device string, weights, kv, prefill uint64) resources.Estimate {
	return resources.Estimate{Device: device, WeightBytes: weights, KVBytes: kv, PrefillBytes: prefill, Tokens: 4096, PrefillChunk: 1024}
}

func TestDecide(t *testing.T) {
	res := resources.DefaultReserves() // 2 GiB RAM, 1.5 GiB VRAM
	ram := func(availGiB float64) resources.Memory {
		return resources.Memory{Total: 24 * GiB, Available: uint64(availGiB * GiB)}
	}
	gpus := resources.GPUStatus{Available: true, Devices: []resources.GPU{
		{Index: 0, Name: "RTX 4090", TotalBytes: 24 * GiB, FreeBytes: 20 * GiB},
		{Index: 1, Name: "RTX 3060", TotalBytes: 12 * GiB, FreeBytes: 3 * GiB},
	}}
	tests := []struct {
		name    string
		est     resources.Estimate
		r       resources.Readings
		refused string // resource refused, "" = fits
		checks  int
		skipped string
	}{
		{name: "cpu fits", est: estimate("cpu", 4*GiB, GiB, GiB), r: resources.Readings{Memory: ram(9)}, checks: 1},
		{name: "cpu exactly at the reserve", est: estimate("cpu", 4*GiB, GiB, GiB), r: resources.Readings{Memory: ram(8)}, checks: 1},
		{name: "cpu one byte short", est: estimate("cpu", 4*GiB, GiB, GiB+1), r: resources.Readings{Memory: ram(8)}, refused: resources.RAM, checks: 1},
		{name: "cuda fits", est: estimate("cuda:0", 4*GiB, GiB, GiB), r: resources.Readings{Memory: ram(7), GPUs: gpus}, checks: 2},
		{name: "cuda vram short", est: estimate("cuda:1", 4*GiB, GiB, GiB), r: resources.Readings{Memory: ram(7), GPUs: gpus}, refused: resources.VRAM, checks: 2},
		{name: "cuda host staging short", est: estimate("cuda:0", 4*GiB, GiB, GiB), r: resources.Readings{Memory: ram(5), GPUs: gpus}, refused: resources.RAM, checks: 2},
		{name: "cuda without telemetry", est: estimate("cuda", 4*GiB, GiB, GiB), r: resources.Readings{Memory: ram(7),
			GPUs: resources.GPUStatus{Err: resources.ErrGPUUnavailable}}, checks: 1, skipped: "vram not checked: gpu telemetry unavailable"},
		{name: "cuda device missing", est: estimate("cuda:5", 4*GiB, GiB, GiB), r: resources.Readings{Memory: ram(7), GPUs: gpus}, checks: 1, skipped: "cuda:5 not found among 2 GPUs"},
		{name: "no meminfo", est: estimate("cpu", 4*GiB, GiB, GiB), r: resources.Readings{MemoryErr: errors.New("no /proc")}, checks: 0, skipped: "ram not checked: no /proc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := resources.Decide(tt.est, tt.r, res, nil)
			if len(d.Checks) != tt.checks {
				t.Fatalf("checks %+v", d.Checks)
			}
			if tt.skipped != "" && (len(d.Skipped) != 1 || !strings.Contains(d.Skipped[0], tt.skipped)) {
				t.Fatalf("skipped %q, want %q", d.Skipped, tt.skipped)
			}
			err := d.Err()
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ire *resources.InsufficientResourcesError
			if !errors.As(err, &ire) || ire.Check.Resource != tt.refused {
				t.Fatalf("err = %v, want refusal on %s", err, tt.refused)
			}
		})
	}
}

func TestRefusalCarriesStructuredHolder(t *testing.T) {
	since := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	holder := &lock.Holder{PID: 4242, Model: "llama-3.1-8b", Since: since}
	est := estimate("cuda:0", 6*GiB, GiB, GiB)
	r := resources.Readings{
		Memory: resources.Memory{Total: 32 * GiB, Available: 20 * GiB},
		GPUs:   resources.GPUStatus{Available: true, Devices: []resources.GPU{{Index: 0, Name: "RTX 4070", TotalBytes: 12 * GiB, FreeBytes: 3 * GiB}}},
	}
	err := resources.Decide(est, r, resources.DefaultReserves(), holder).Err()

	var ire *resources.InsufficientResourcesError
	if !errors.As(err, &ire) {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, resources.ErrInsufficientResources) || ire.Code() != "insufficient_resources" {
		t.Fatal("code or sentinel wrong")
	}
	if ire.Free() != 3*GiB || ire.Needed() != 8*GiB+1536*resources.MiB || ire.Check.Device != "cuda:0 (RTX 4070)" {
		t.Fatalf("free %d needed %d device %s", ire.Free(), ire.Needed(), ire.Check.Device)
	}
	if ire.Holder == nil || *ire.Holder != *holder {
		t.Fatalf("holder %+v", ire.Holder)
	}
	j, _ := json.Marshal(ire.Holder)
	if string(j) != `{"pid":4242,"model":"llama-3.1-8b","since":"2026-11-29T21:00:00Z"}` {
		t.Fatalf("holder JSON %s", j)
	}
	msg := err.Error()
	for _, want := range []string{"insufficient VRAM on cuda:0 (RTX 4070)", "3.0 GiB free", "9.5 GiB needed",
		"6.0 GiB weights", "pid 4242 (model llama-3.1-8b)", "PRISM_VRAM_RESERVE_MB", "PRISM_RESOURCE_CHECK=off"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}

	// Without a holder the field stays nil (error.holder omitted) and the
	// message does not invent one.
	err = resources.Decide(est, r, resources.DefaultReserves(), nil).Err()
	if !errors.As(err, &ire) || ire.Holder != nil || strings.Contains(err.Error(), "held by") {
		t.Fatalf("holder invented: %v", err)
	}
}

// wrapping mimics engine's ModelLoadError: a refusal stays reachable
// through errors.As and errors.Is after being wrapped.
type wrapping struct{ err error }

func (w *wrapping) Error() string { return "model_load_failed: " + w.err.Error() }
func (w *wrapping) Unwrap() error { return w.err }

func TestRefusalSurvivesWrapping(t *testing.T) {
	err := resources.Decide(estimate("cpu", 30*GiB, 0, 0), resources.Readings{Memory: resources.Memory{Total: 1, Available: GiB}}, resources.DefaultReserves(), nil).Err()
	wrapped := &wrapping{err}
	var ire *resources.InsufficientResourcesError
	if !errors.As(wrapped, &ire) || !errors.Is(wrapped, resources.ErrInsufficientResources) {
		t.Fatal("refusal lost through wrapping")
	}
	var coder interface{ Code() string }
	if !errors.As(wrapped, &coder) || coder.Code() != "insufficient_resources" {
		t.Fatal("code lost through wrapping")
	}
}

func BenchmarkDecide(b *testing.B) {
	est := estimate("cuda:0", 4*GiB, GiB, GiB)
	r := resources.Readings{Memory: resources.Memory{Total: 24 * GiB, Available: 12 * GiB},
		GPUs: resources.GPUStatus{Available: true, Devices: []resources.GPU{{Index: 0, TotalBytes: 24 * GiB, FreeBytes: 20 * GiB}}}}
	res := resources.DefaultReserves()
	b.ReportAllocs()
	for b.Loop() {
		if err := resources.Decide(est, r, res, nil).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
