package prism

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

func quiet() Option { return WithLogger(slog.New(slog.DiscardHandler)) }

// Without WithEnv nothing is read from the process environment.
func TestNoEnvWithoutWithEnv(t *testing.T) {
	t.Setenv("PRISM_DEVICE", "cuda")
	t.Setenv("PRISM_THREADS", "many")
	c, err := newConfig([]Option{quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if c.device != "auto" || c.threads != 0 || c.lockOpts != nil || engine.PrefillChunk(c.engineOpts...) != engine.DefaultPrefillChunk {
		t.Errorf("the process environment reached Open: %+v", c)
	}
}

// The settings reach each library package as its options, and an option
// given to Open wins whatever its place.
func TestEnvReachesTheOptions(t *testing.T) {
	dir := t.TempDir()
	c, err := newConfig([]Option{WithDevice("cpu"), quiet(), WithEnv([]string{
		"PRISM_DEVICE=cuda", "PRISM_THREADS=3", "PRISM_ORT_LIB=/x/ort.so", "PRISM_HOME=" + dir, "PRISM_LOAD_TIMEOUT=2.5",
		"PRISM_RESOURCE_CHECK=off", "PRISM_RAM_RESERVE_MB=512", "PRISM_VRAM_RESERVE_MB=256", "PRISM_PREFILL_CHUNK=0",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if prefill := engine.PrefillChunk(c.engineOpts...); c.device != "cpu" || c.threads != 3 || c.ortLibrary != "/x/ort.so" || prefill != 0 {
		t.Errorf("device %q threads %d library %q prefill %d", c.device, c.threads, c.ortLibrary, prefill)
	}
	lk, err := lock.New(c.lockOpts...)
	if err != nil || lk.Dir() != dir || lk.Timeout() != 2500*time.Millisecond {
		t.Errorf("lock %s %s, %v", lk.Dir(), lk.Timeout(), err)
	}
	ch := resources.NewChecker(c.checkerOpts...)
	if ch.Enabled() || ch.Reserves() != (resources.Reserves{RAM: 512 * resources.MiB, VRAM: 256 * resources.MiB}) || ch.PrefillChunk() != 0 {
		t.Errorf("checker enabled %v reserves %+v chunk %d", ch.Enabled(), ch.Reserves(), ch.PrefillChunk())
	}
	cached, err := newConfig([]Option{quiet(), WithEnv([]string{"PRISM_CACHE_DIR=/cache"})})
	if err != nil || !strings.HasPrefix(cached.ortLibrary, "/cache/npm/onnxruntime-node@") {
		t.Errorf("PRISM_CACHE_DIR: library %q, %v", cached.ortLibrary, err)
	}
}

func cycling() *enginetest.Backend {
	b := enginetest.NewBackend("", 0)
	b.Logits = func(dst []float32, _ []int32, _ int) {
		clear(dst)
		dst['x'] = 30
	}
	return b
}

// PRISM_LOOP_GUARD and PRISM_PREFILL_CHUNK reach the engine (the cases the
// engine's own tests once ran through its environment lookup).
func TestEnvReachesTheEngine(t *testing.T) {
	c, err := newConfig([]Option{quiet(), WithEnv([]string{"PRISM_LOOP_GUARD=off", "PRISM_PREFILL_CHUNK=64"})})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := enginetest.NewEngineBackend(t, cycling(), c.engineOpts...)
	_, res, err := e.Generate(context.Background(), engine.Request{Prompt: "go", MaxTokens: 300})
	if err != nil || res.Usage.CompletionTokens != 300 || res.LoopGuard {
		t.Errorf("loop guard off: %d tokens, guard %v, %v; want 300 and no guard", res.Usage.CompletionTokens, res.LoopGuard, err)
	}
	e, b := enginetest.NewEngineBackend(t, enginetest.NewBackend("ok", 0), c.engineOpts...)
	s, err := e.Stream(context.Background(), engine.Request{Prompt: strings.Repeat("abcdefghij", 25), MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if st := b.Stats(); st.Forwards != 4 || st.MaxChunk != 64 {
		t.Errorf("prefill stats %+v, want 4 forwards of at most 64", st)
	}
	// An explicit engine option still wins.
	c, err = newConfig([]Option{quiet(), WithEngineOptions(engine.WithPrefillChunk(100)), WithEnv([]string{"PRISM_PREFILL_CHUNK=64"})})
	if err != nil {
		t.Fatal(err)
	}
	e, b = enginetest.NewEngineBackend(t, enginetest.NewBackend("ok", 0), c.engineOpts...)
	if s, err = e.Stream(context.Background(), engine.Request{Prompt: strings.Repeat("abcdefghij", 25), MaxTokens: 10}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if st := b.Stats(); st.MaxChunk != 100 {
		t.Errorf("WithEngineOptions lost to the environment: %+v", st)
	}
}

// Every bad value is refused at once, each named; warnings are logged.
func TestEnvErrorsAndWarnings(t *testing.T) {
	_, err := newConfig([]Option{quiet(), WithEnv([]string{"PRISM_PREFILL_CHUNK=lots", "PRISM_DEVICE=gpu2", "PRISM_THREADS=many"})})
	for _, want := range []string{`PRISM_PREFILL_CHUNK="lots"`, `PRISM_DEVICE="gpu2": want auto, cpu or cuda`, `PRISM_THREADS="many"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %s", err, want)
		}
	}
	var logs strings.Builder
	_, err = newConfig([]Option{WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithEnv([]string{"PRISM_DEVIC=cuda", "PRISM_VARIANT=q4", "PRISM_KV_HANDOVER=exact"})})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PRISM_DEVIC is not a Prism setting; did you mean PRISM_DEVICE?"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no warning %q in\n%s", want, logs.String())
		}
	}
	for _, applied := range []string{"PRISM_VARIANT", "PRISM_KV_HANDOVER"} {
		if strings.Contains(logs.String(), applied) {
			t.Errorf("%s is applied, yet warned about:\n%s", applied, logs.String())
		}
	}
}

// PRISM_KV_HANDOVER=exact is WithExactHandover; auto leaves the choice to
// the proof at load.
func TestEnvKVHandover(t *testing.T) {
	for env, want := range map[string]bool{"PRISM_KV_HANDOVER=exact": true, "PRISM_KV_HANDOVER=auto": false} {
		c, err := newConfig([]Option{quiet(), WithEnv([]string{env})})
		if err != nil {
			t.Fatal(err)
		}
		if c.exactKV != want {
			t.Errorf("%s: exact hand-over %v, want %v", env, c.exactKV, want)
		}
	}
}

// PRISM_STRICT_CUDA=on is WithStrictCUDA; an explicit option wins over the
// setting.
func TestEnvStrictCUDA(t *testing.T) {
	cases := []struct {
		opts []Option
		want bool
	}{
		{[]Option{WithEnv([]string{"PRISM_STRICT_CUDA=on"})}, true},
		{[]Option{WithEnv([]string{"PRISM_STRICT_CUDA=off"})}, false},
		{[]Option{WithEnv([]string{"PRISM_STRICT_CUDA=off"}), WithStrictCUDA()}, true},
		{[]Option{WithStrictCUDA(), WithEnv([]string{"PRISM_STRICT_CUDA=off"})}, true},
	}
	for i, tc := range cases {
		c, err := newConfig(append([]Option{quiet()}, tc.opts...))
		if err != nil {
			t.Fatal(err)
		}
		if c.strictCUDA != tc.want {
			t.Errorf("case %d: strict CUDA %v, want %v", i, c.strictCUDA, tc.want)
		}
	}
}

// PRISM_MAX_BATCH is WithMaxBatch; an explicit option wins over the
// setting, and a negative batch is refused.
func TestEnvMaxBatch(t *testing.T) {
	cases := []struct {
		opts []Option
		want int
	}{
		{nil, 0},
		{[]Option{WithEnv(nil)}, 1},
		{[]Option{WithEnv([]string{"PRISM_MAX_BATCH=4"})}, 4},
		{[]Option{WithEnv([]string{"PRISM_MAX_BATCH=4"}), WithMaxBatch(2)}, 2},
		{[]Option{WithMaxBatch(8), WithEnv([]string{"PRISM_MAX_BATCH=4"})}, 8},
	}
	for i, tc := range cases {
		c, err := newConfig(append([]Option{quiet()}, tc.opts...))
		if err != nil {
			t.Fatal(err)
		}
		if c.maxBatch != tc.want {
			t.Errorf("case %d: max batch %d, want %d", i, c.maxBatch, tc.want)
		}
	}
	if _, err := newConfig([]Option{quiet(), WithMaxBatch(-1)}); err == nil {
		t.Error("WithMaxBatch(-1) was accepted")
	}
	if _, err := newConfig([]Option{quiet(), WithEnv([]string{"PRISM_MAX_BATCH=0"})}); err == nil || !strings.Contains(err.Error(), "PRISM_MAX_BATCH") {
		t.Errorf("PRISM_MAX_BATCH=0: %v, want an error naming it", err)
	}
}
