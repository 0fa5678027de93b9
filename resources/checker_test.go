package resources_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

func env(m map[string]string) resources.Option {
	return resources.WithGetenv(func(k string) string { return m[k] })
}

func TestCheckerConfiguration(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		enabled  bool
		reserves resources.Reserves
		chunk    int
		warnings int
	}{
		{name: "defaults", env: nil, enabled: true, reserves: resources.DefaultReserves(), chunk: 1024},
		{name: "set", env: map[string]string{"PRISM_RAM_RESERVE_MB": "512", "PRISM_VRAM_RESERVE_MB": "256.5", "PRISM_PREFILL_CHUNK": "256"},
			enabled: true, reserves: resources.Reserves{RAM: 512 * resources.MiB, VRAM: 256.5 * resources.MiB}, chunk: 256},
		{name: "off", env: map[string]string{"PRISM_RESOURCE_CHECK": "off"}, enabled: false, reserves: resources.DefaultReserves(), chunk: 1024},
		{name: "OFF", env: map[string]string{"PRISM_RESOURCE_CHECK": "OFF"}, enabled: false, reserves: resources.DefaultReserves(), chunk: 1024},
		{name: "malformed falls back and warns", env: map[string]string{"PRISM_RAM_RESERVE_MB": "lots", "PRISM_VRAM_RESERVE_MB": "-1",
			"PRISM_PREFILL_CHUNK": "-5", "PRISM_RESOURCE_CHECK": "maybe"}, enabled: true, reserves: resources.DefaultReserves(), chunk: 1024, warnings: 4},
		{name: "malformed chunk", env: map[string]string{"PRISM_PREFILL_CHUNK": "big"}, enabled: true, reserves: resources.DefaultReserves(), chunk: 1024, warnings: 1},
		// 0 is the engine's "whole prompt at once", not a malformed value.
		{name: "whole-prompt prefill", env: map[string]string{"PRISM_PREFILL_CHUNK": "0"}, enabled: true, reserves: resources.DefaultReserves(), chunk: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := resources.NewChecker(env(tt.env), resources.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if c.Enabled() != tt.enabled || c.Reserves() != tt.reserves || c.PrefillChunk() != tt.chunk || len(c.Warnings()) != tt.warnings {
				t.Fatalf("enabled %v reserves %+v chunk %d warnings %q", c.Enabled(), c.Reserves(), c.PrefillChunk(), c.Warnings())
			}
			if got := strings.Count(logs.String(), "level=WARN"); got != tt.warnings {
				t.Fatalf("logged %d warnings, want %d:\n%s", got, tt.warnings, logs.String())
			}
		})
	}
}

func fakeMemory(availGiB float64) resources.Option {
	return resources.WithMemoryReader(func() (resources.Memory, error) {
		return resources.Memory{Total: 32 * GiB, Available: uint64(availGiB * GiB)}, nil
	})
}

func TestCheckerRefusesWithHolder(t *testing.T) {
	dir := writeFolder(t, map[string]string{"genai_config.json": qwenGenai, "config.json": qwenHF,
		"model.onnx": bytesOf(100), "model.onnx.data": bytesOf(1000)})
	nv := &fakeNVML{devices: []resources.GPU{gpu(0, "RTX 4060", 8192, 7000)}}
	holder := &lock.Holder{PID: 777, Model: "other-model"}
	c := resources.NewChecker(env(nil), resources.WithNVML(nv), fakeMemory(16),
		resources.WithHolderFunc(func() *lock.Holder { return holder }))

	d, err := c.Check(context.Background(), dir, "cuda", resources.Plan{})
	var ire *resources.InsufficientResourcesError
	if !errors.As(err, &ire) {
		t.Fatalf("err = %v, want refusal (1192 MiB free < reserve)", err)
	}
	if ire.Holder == nil || ire.Holder.PID != 777 || d.Holder != ire.Holder || ire.Check.Resource != resources.VRAM {
		t.Fatalf("refusal %+v", ire)
	}

	// The same model fits on the CPU with 16 GiB available.
	if _, err := c.Check(context.Background(), dir, "cpu", resources.Plan{}); err != nil {
		t.Fatalf("cpu: %v", err)
	}
}

func TestCheckerDisabledMeasuresNothing(t *testing.T) {
	called := false
	c := resources.NewChecker(env(map[string]string{"PRISM_RESOURCE_CHECK": "off"}),
		resources.WithMemoryReader(func() (resources.Memory, error) { called = true; return resources.Memory{}, nil }))
	d, err := c.Check(context.Background(), "/nonexistent", "cuda", resources.Plan{})
	if err != nil || !d.Disabled || called {
		t.Fatalf("decision %+v err %v measured %v", d, err, called)
	}
}

func TestCheckerLogsSkippedVRAMCheck(t *testing.T) {
	dir := writeFolder(t, map[string]string{"model.onnx": "x"})
	var logs bytes.Buffer
	c := resources.NewChecker(env(nil), fakeMemory(16), resources.WithNVML(&fakeNVML{initErr: errors.New("libnvidia-ml.so.1 not found")}),
		resources.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	d, err := c.Check(context.Background(), dir, "cuda", resources.Plan{})
	if err != nil || len(d.Skipped) != 1 {
		t.Fatalf("decision %+v err %v", d, err)
	}
	if !strings.Contains(logs.String(), "vram not checked") || !strings.Contains(logs.String(), "libnvidia-ml.so.1 not found") {
		t.Fatalf("skip not logged:\n%s", logs.String())
	}
}

func TestCheckerHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := resources.NewChecker(env(nil)).Check(ctx, t.TempDir(), "cpu", resources.Plan{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestSnapshotDelta(t *testing.T) {
	avail := []float64{10, 8.5}
	used := []uint64{1000, 3048}
	call := 0
	nv := &fakeNVML{devices: []resources.GPU{gpu(0, "g", 8192, 0)}}
	c := resources.NewChecker(env(nil), resources.WithNVML(nv), resources.WithMemoryReader(func() (resources.Memory, error) {
		m := resources.Memory{Total: 32 * GiB, Available: uint64(avail[call] * GiB)}
		nv.devices[0] = gpu(0, "g", 8192, used[call])
		call++
		return m, nil
	}))
	before := c.Snapshot(true)
	after := c.Snapshot(true)
	d := after.Sub(before)
	if !d.RAMKnown || d.RAMBytes != 1.5*GiB || len(d.VRAM) != 1 || d.VRAM[0].Bytes != 2048*resources.MiB {
		t.Fatalf("delta %+v", d)
	}
	var logs bytes.Buffer
	resources.LogLoad(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), "qwen", "cuda:0", before, after)
	for _, want := range []string{"model loaded", "model=qwen", "memory_delta.ram_mib=1536", "memory_delta.vram_mib_cuda_0=2048"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q: %s", want, logs.String())
		}
	}
}

// With PRISM_PREFILL_CHUNK=0 the engine prefills the whole prompt in one
// step, so the budget's prefill headroom covers the whole planned length.
func TestCheckerWholePromptPrefillHeadroom(t *testing.T) {
	dir := writeFolder(t, map[string]string{"genai_config.json": qwenGenai, "config.json": qwenHF,
		"model.onnx": bytesOf(100), "model.onnx.data": bytesOf(1000)})
	quiet := resources.WithLogger(slog.New(slog.DiscardHandler))
	d, err := resources.NewChecker(env(map[string]string{"PRISM_PREFILL_CHUNK": "0"}), fakeMemory(30), quiet).
		Check(context.Background(), dir, "cpu", resources.Plan{Tokens: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if d.Estimate.PrefillChunk != 3000 {
		t.Errorf("prefill headroom for %d-token chunks, want the whole 3000-token plan", d.Estimate.PrefillChunk)
	}
	d, err = resources.NewChecker(env(map[string]string{"PRISM_PREFILL_CHUNK": "0"}), fakeMemory(30), quiet).
		Check(context.Background(), dir, "cpu", resources.Plan{Tokens: 3000, PrefillChunk: 512})
	if err != nil || d.Estimate.PrefillChunk != 512 {
		t.Errorf("a plan's own chunk: %d, %v; want 512", d.Estimate.PrefillChunk, err)
	}
}
