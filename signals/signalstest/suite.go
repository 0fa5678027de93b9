// Package signalstest is the contract test suite every [signals.Store] must
// pass, run by the memory, sqlite and postgres stores alike (and by any
// third-party store): queue semantics, the verb router's SPEC-041 §4
// verification items, the PLAT-095 lifecycle regression cases and the
// concurrent exactly-once check.
//
//	func TestContract(t *testing.T) {
//		signalstest.Run(t, func(t *testing.T) signals.Store { return openFresh(t) }, signalstest.Options{})
//	}
package signalstest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// Opener returns a fresh, empty store for one test and arranges its Close
// with t.Cleanup.
type Opener func(t *testing.T) signals.Store

// Options sizes the suite.
type Options struct {
	// Senders and Drainers are the concurrent goroutines of the
	// exactly-once check; default 8 each.
	Senders, Drainers int
	// Signals is the number of signals the exactly-once check sends in
	// total; default 10000, or 2000 with -short.
	Signals int
	// Lease is the short lease the redelivery cases use; default 150ms.
	Lease time.Duration
}

func (o *Options) defaults() {
	if o.Senders <= 0 {
		o.Senders = 8
	}
	if o.Drainers <= 0 {
		o.Drainers = 8
	}
	if o.Signals <= 0 {
		o.Signals = 10000
		if testing.Short() {
			o.Signals = 2000
		}
	}
	if o.Lease <= 0 {
		o.Lease = 150 * time.Millisecond
	}
}

// Run runs the whole contract against stores made by open.
func Run(t *testing.T, open Opener, opts Options) {
	t.Helper()
	opts.defaults()
	t.Run("Queue", func(t *testing.T) { RunQueue(t, open, opts) })
	t.Run("Router", func(t *testing.T) { RunRouter(t, open, opts) })
	t.Run("Lifecycle", func(t *testing.T) { RunLifecycle(t, open, opts) })
	t.Run("Concurrency", func(t *testing.T) { RunConcurrency(t, open, opts) })
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every few milliseconds until it holds or the
// deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// need turns a (value, error) result into a check: need(f())(t) fails t on
// an error and returns the value otherwise.
func need[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func jsonKeys(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func ids(sigs []signals.Signal) []string {
	out := make([]string, len(sigs))
	for i, s := range sigs {
		out[i] = s.ID
	}
	return out
}
