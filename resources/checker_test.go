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

// TestCheckerConfiguration: the Checker takes its settings from options
// only. The PRISM_* variables reach it through internal/config, where a
// malformed value is an error (tested there), never a warning and a default.
func TestCheckerConfiguration(t *testing.T) {
	t.Setenv("PRISM_RESOURCE_CHECK", "off") // must be ignored
	t.Setenv("PRISM_PREFILL_CHUNK", "7")
	tests := []struct {
		name     string
		opts     []resources.Option
		enabled  bool
		reserves resources.Reserves
		chunk    int
	}{
		{name: "defaults", enabled: true, reserves: resources.DefaultReserves(), chunk: 1024},
		{name: "set", opts: []resources.Option{resources.WithReserves(resources.Reserves{RAM: 512 * resources.MiB, VRAM: 256.5 * resources.MiB}), resources.WithPrefillChunk(256)},
			enabled: true, reserves: resources.Reserves{RAM: 512 * resources.MiB, VRAM: 256.5 * resources.MiB}, chunk: 256},
		{name: "off", opts: []resources.Option{resources.WithEnabled(false)}, enabled: false, reserves: resources.DefaultReserves(), chunk: 1024},
		{name: "negative chunk keeps the default", opts: []resources.Option{resources.WithPrefillChunk(-5)}, enabled: true, reserves: resources.DefaultReserves(), chunk: 1024},
		// 0 is the engine's "whole prompt at once", not a malformed value.
		{name: "whole-prompt prefill", opts: []resources.Option{resources.WithPrefillChunk(0)}, enabled: true, reserves: resources.DefaultReserves(), chunk: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := resources.NewChecker(append(tt.opts, resources.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))...)
			if c.Enabled() != tt.enabled || c.Reserves() != tt.reserves || c.PrefillChunk() != tt.chunk {
				t.Fatalf("enabled %v reserves %+v chunk %d", c.Enabled(), c.Reserves(), c.PrefillChunk())
			}
			if got := strings.Count(logs.String(), "level=WARN"); got != 0 {
				t.Fatalf("logged %d warnings, want none:\n%s", got, logs.String())
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
	c := resources.NewChecker(resources.WithNVML(nv), fakeMemory(16),
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
	c := resources.NewChecker(resources.WithEnabled(false),
		resources.WithMemoryReader(func() (resources.Memory, error) { called = true; return resources.Memory{}, nil }))
	d, err := c.Check(context.Background(), "/nonexistent", "cuda", resources.Plan{})
	if err != nil || !d.Disabled || called {
		t.Fatalf("decision %+v err %v measured %v", d, err, called)
	}
}

func TestCheckerLogsSkippedVRAMCheck(t *testing.T) {
	dir := writeFolder(t, map[string]string{"model.onnx": "x"})
	var logs bytes.Buffer
	c := resources.NewChecker(fakeMemory(16), resources.WithNVML(&fakeNVML{initErr: errors.New("libnvidia-ml.so.1 not found")}),
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
	if _, err := resources.NewChecker().Check(ctx, t.TempDir(), "cpu", resources.Plan{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestSnapshotDelta(t *testing.T) {
	avail := []float64{10, 8.5}
	used := []uint64{1000, 3048}
	call := 0
	nv := &fakeNVML{devices: []resources.GPU{gpu(0, "g", 8192, 0)}}
	c := resources.NewChecker(resources.WithNVML(nv), resources.WithMemoryReader(func() (resources.Memory, error) {
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
	for _, want := range []string{`msg="load memory"`, "model=qwen", "memory_delta.ram_mib=1536", "memory_delta.vram_mib_cuda_0=2048"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q: %s", want, logs.String())
		}
	}
}

// With a prefill chunk of 0 the engine prefills the whole prompt in one
// step, so the budget's prefill headroom covers the whole planned length.
func TestCheckerWholePromptPrefillHeadroom(t *testing.T) {
	dir := writeFolder(t, map[string]string{"genai_config.json": qwenGenai, "config.json": qwenHF,
		"model.onnx": bytesOf(100), "model.onnx.data": bytesOf(1000)})
	quiet := resources.WithLogger(slog.New(slog.DiscardHandler))
	d, err := resources.NewChecker(resources.WithPrefillChunk(0), fakeMemory(30), quiet).
		Check(context.Background(), dir, "cpu", resources.Plan{Tokens: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if d.Estimate.PrefillChunk != 3000 {
		t.Errorf("prefill headroom for %d-token chunks, want the whole 3000-token plan", d.Estimate.PrefillChunk)
	}
	d, err = resources.NewChecker(resources.WithPrefillChunk(0), fakeMemory(30), quiet).
		Check(context.Background(), dir, "cpu", resources.Plan{Tokens: 3000, PrefillChunk: 512})
	if err != nil || d.Estimate.PrefillChunk != 512 {
		t.Errorf("a plan's own chunk: %d, %v; want 512", d.Estimate.PrefillChunk, err)
	}
}
