//go:build cgo

package onnx

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/onnxgen"
)

// stepContext is a context that counts the multi-token steps run under it
// and cancels itself as step cancelAt begins. runCancellable ties the run
// options' terminate to the context with context.AfterFunc, which hands
// the registration to a parent context's own AfterFunc method: so each
// call here is one step about to run, and the cancel lands while that step
// is on its way into (or already inside) the runtime.
type stepContext struct {
	inner    context.Context
	cancel   context.CancelFunc
	cancelAt int32
	steps    atomic.Int32
}

func (c *stepContext) Deadline() (time.Time, bool) { return c.inner.Deadline() }
func (c *stepContext) Done() <-chan struct{}       { return c.inner.Done() }
func (c *stepContext) Err() error                  { return c.inner.Err() }

// Value returns nothing, so the context package cannot see the inner
// cancel context and must register through AfterFunc.
func (c *stepContext) Value(any) any { return nil }

func (c *stepContext) AfterFunc(f func()) func() bool {
	if c.steps.Add(1) == c.cancelAt {
		c.cancel()
	}
	return context.AfterFunc(c.inner, f)
}

// cancelStep is the length of the test's prefill steps.
const cancelStep = 128

// cancelModel is big enough that one prefill step of cancelStep tokens takes
// a long time next to the two goroutine hand-offs between cancel and the
// runtime's terminate (about 9 GFLOP a step: hundreds of milliseconds on
// one core, against microseconds).
func cancelModel() onnxgen.Config {
	c := byteModel(onnxgen.Tiny(), "")
	c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Intermediate = 4, 768, 12, 4, 3072
	c.Context = 4*cancelStep + 8
	return c
}

// TestCancelStopsRunningStep cancels the second step of a prefill as it
// starts. The runtime's terminate must abandon that step: the cache keeps
// only the first step's tokens (a step left to finish would have committed
// its tokens before Forward saw the cancel), and the backend works
// afterwards from where the cache is.
func TestCancelStopsRunningStep(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 140 MB model")
	}
	b := openModel(t, modelDir(t, "cancel-optimum-fp32", cancelModel()), Options{})
	ids := make([]int32, 3*cancelStep)
	for i := range ids {
		ids[i] = int32(i % 256)
	}
	if _, err := b.Forward(t.Context(), ids[:cancelStep], 0); err != nil {
		t.Fatal(err)
	}
	inner, cancel := context.WithCancel(t.Context())
	defer cancel()
	ctx := &stepContext{inner: inner, cancel: cancel, cancelAt: 1}
	_, err := b.Forward(ctx, ids[cancelStep:], cancelStep)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Forward cancelled as its step started: %v", err)
	}
	if n := ctx.steps.Load(); n != 1 {
		t.Fatalf("%d steps started, want 1", n)
	}
	if b.cached != cancelStep {
		t.Fatalf("%d positions cached after the cancel, want %d: the second step was not abandoned", b.cached, cancelStep)
	}
	if _, err := b.Forward(t.Context(), ids[cancelStep:cancelStep+4], cancelStep); err != nil {
		t.Fatalf("backend unusable after a terminated step: %v", err)
	}
	if b.cached != cancelStep+4 {
		t.Fatalf("%d positions cached after resuming, want %d", b.cached, cancelStep+4)
	}
}
