//go:build cgo

package onnx

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/internal/onnxgen"
)

// handoverVariants are the variants on the padded present→past hand-over.
var handoverVariants = []string{"optimum-fp32", "optimum-int4"}

// tolerance is the largest relative error against the oracle that
// docs/models.md promises for cfg: 1e-4 for float32 compute, 2e-3 for
// float16 I/O (measured ≈ 2.6e-4: logits rounded to float16), 2e-2 for
// int4 weights at an accuracy level that lets ONNX Runtime quantize the
// activations to int8 (measured ≈ 3e-3 here; the oracle keeps them float).
func tolerance(cfg onnxgen.Config) float64 {
	switch {
	case cfg.Quant == onnxgen.QuantInt4 && cfg.Int4Accuracy != 0:
		return 2e-2
	case cfg.DType == onnxgen.FP16:
		return 2e-3
	}
	return 1e-4
}

// paddedOf returns b's padded cache, failing the test on another kind.
func paddedOf(t *testing.T, b *Backend) *paddedCache {
	t.Helper()
	c, ok := b.kv.(*paddedCache)
	if !ok {
		t.Fatalf("cache is %s, want the padded hand-over", b.cacheKind())
	}
	return c
}

// checkPadding fails unless A's rows [length, stride) are zero in every head
// and slot: padding is masked, and must also hold nothing stale.
func checkPadding(t *testing.T, c *paddedCache) {
	t.Helper()
	if c.stride != padTo(c.length) {
		t.Fatalf("stride %d for %d positions, want %d", c.stride, c.length, padTo(c.length))
	}
	row := c.rowBytes()
	for i := range c.bufs {
		for h := range c.kvHeads {
			for k, v := range c.bufs[i][0][(h*c.stride+c.length)*row : (h+1)*c.stride*row] {
				if v != 0 {
					t.Fatalf("slot %d head %d: padding byte %d is %#x", i, h, k, v)
				}
			}
		}
	}
}

// stepper runs one Forward on the backend and on the oracle and compares
// the logits.
type stepper struct {
	t   *testing.T
	b   *Backend
	o   *onnxgen.Oracle
	tol float64
}

func (s stepper) step(ids []int32, pos int) []float32 {
	s.t.Helper()
	got, err := s.b.Forward(context.Background(), ids, pos)
	if err != nil {
		s.t.Fatalf("forward %d tokens at %d: %v", len(ids), pos, err)
	}
	if e := maxRelErr(got, s.o.Forward(ids, pos)); e > s.tol {
		s.t.Fatalf("forward %d tokens at %d: relative error %g > %g", len(ids), pos, e, s.tol)
	}
	return got
}

func newStepper(t *testing.T, name string) stepper {
	cfg := variants()[name]
	b := openModel(t, writeModel(t, cfg), Options{})
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return stepper{t: t, b: b, o: o, tol: tolerance(cfg)}
}

// Greedy decoding across several block boundaries, from a small reserve
// that has to grow (keeping the cached positions) on the way, gives the
// oracle's logits at every step.
func TestPaddedDecodeAcrossBlocks(t *testing.T) {
	for _, name := range handoverVariants {
		t.Run(name, func(t *testing.T) {
			s := newStepper(t, name)
			if err := s.b.Reserve(16); err != nil {
				t.Fatal(err)
			}
			prompt := []int32{1, 2, 3, 4, 5}
			logits := s.step(prompt, 0)
			pos := len(prompt)
			for range 200 {
				logits = s.step([]int32{argmaxOf(logits)}, pos)
				pos++
			}
			c := paddedOf(t, s.b)
			checkPadding(t, c)
			if c.length != pos || c.stride != 256 {
				t.Fatalf("length %d stride %d, want %d and 256", c.length, c.stride, pos)
			}
		})
	}
}

// Prefix reuse to a position inside a block, at a block boundary, inside
// the same block and back to the start, each followed by a chunk and decode
// steps, gives the oracle's logits; the padding is clean after each cut.
func TestPaddedTruncate(t *testing.T) {
	for _, name := range handoverVariants {
		t.Run(name, func(t *testing.T) {
			s := newStepper(t, name)
			if err := s.b.Reserve(256); err != nil {
				t.Fatal(err)
			}
			c := paddedOf(t, s.b)
			ids := func(n, seed int) []int32 {
				out := make([]int32, n)
				for i := range out {
					out[i] = int32(1 + (i*13+seed*7)%250)
				}
				return out
			}
			decode := func(from, n int) {
				for i := range n {
					s.step([]int32{int32(1 + (from+i)%250)}, from+i)
				}
			}
			s.step(ids(100, 1), 0)
			decode(100, 50) // 150 cached, stride 192
			for _, cut := range []struct{ to, chunk int }{
				{70, 3},  // into the previous block: stride 192 -> 128
				{64, 1},  // a block boundary: stride 64
				{60, 2},  // inside the same block
				{0, 5},   // start over
				{130, 0}, // beyond the cache: nothing to drop
			} {
				to := min(cut.to, c.length)
				if cut.chunk > 0 {
					s.step(ids(cut.chunk, to), to)
				}
				if c.length != to+cut.chunk {
					t.Fatalf("after a cut to %d and %d tokens: %d cached", to, cut.chunk, c.length)
				}
				checkPadding(t, c)
				decode(c.length, 70) // crosses at least one block
				checkPadding(t, c)
			}
		})
	}
}

// A multi-token step the runtime abandons (as cancelling does, through the
// run options) leaves the cache where it was; the next steps still give the
// oracle's logits.
func TestPaddedAbort(t *testing.T) {
	s := newStepper(t, "optimum-fp32")
	if err := s.b.Reserve(256); err != nil {
		t.Fatal(err)
	}
	c := paddedOf(t, s.b)
	s.step([]int32{1, 2, 3, 4, 5, 6, 7}, 0)
	if err := s.b.runOpts.Terminate(); err != nil {
		t.Fatal(err)
	}
	_, err := s.b.run(context.Background(), []int32{8, 9, 10}, 7, false)
	if err := s.b.runOpts.UnsetTerminate(); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("a terminated step succeeded")
	}
	if c.length != 7 || s.b.cached != 7 || c.tmp != nil || c.cur != nil {
		t.Fatalf("after the abandoned step: length %d, cached %d, views left %v %v", c.length, s.b.cached, c.tmp, c.cur)
	}
	checkPadding(t, c)
	s.step([]int32{11, 12}, 7)
	s.step([]int32{13}, 9)
}

// TestSlidingWindowKeepsExactLengths: a model whose config.json declares a
// sliding window counts the window in cache positions, so it must not get
// padded pasts; one that names a window it does not use may.
func TestSlidingWindowKeepsExactLengths(t *testing.T) {
	for extra, want := range map[string]string{
		`"sliding_window": 4096`:                              "present-to-past",
		`"sliding_window": 4096, "use_sliding_window": false`: "present-to-past-padded",
	} {
		dir := writeModel(t, variants()["optimum-fp32"])
		path := filepath.Join(dir, "config.json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.Replace(data, []byte("{"), []byte("{"+extra+", "), 1)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := openModel(t, dir, Options{}).cacheKind(); got != want {
			t.Errorf("config with %s: cache %s, want %s", extra, got, want)
		}
	}
}

// forcePadded replaces b's cache with a fresh padded hand-over, whatever
// Open chose, to show what it does on a graph it does not suit.
func forcePadded(t *testing.T, b *Backend) *paddedCache {
	t.Helper()
	b.kv.close()
	b.closeMasks()
	c := newPaddedCache(cacheShape{slots: len(b.io.pasts), kvHeads: b.io.kvHeads, headDim: b.io.headDim, dt: b.io.kvType}, b.io.maskType)
	b.kv, b.cached = c, 0
	clear(b.boundIn)
	clear(b.boundOut)
	if err := b.reserve(64); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPaddedPastBreaksPositionMask is the failure the padded hand-over
// must never be used for: a graph whose causal mask compares cache indices
// with position_ids (key j visible to a query at position p when j <= p)
// hides the new token from itself once the past carries padding, so the
// first decode step already differs from the oracle.
func TestPaddedPastBreaksPositionMask(t *testing.T) {
	cfg := onnxgen.Tiny()
	cfg.Mask = onnxgen.MaskPositions
	b := openModel(t, writeModel(t, cfg), Options{})
	forcePadded(t, b)
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	prompt := []int32{1, 2, 3, 4, 5}
	got, err := b.Forward(ctx, prompt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := maxRelErr(got, o.Forward(prompt, 0)); e > 1e-4 {
		t.Fatalf("prefill (no padding yet): relative error %g", e)
	}
	next := []int32{argmaxOf(got)}
	got, err = b.Forward(ctx, next, len(prompt))
	if err != nil {
		t.Fatal(err)
	}
	e := maxRelErr(got, o.Forward(next, len(prompt)))
	if e < 1e-2 {
		t.Fatalf("decode on a padded past: relative error %g; the position-based mask should have broken it", e)
	}
	t.Logf("decode on a padded past: relative error %g against the oracle", e)
}
