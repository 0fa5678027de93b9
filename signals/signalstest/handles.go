package signalstest

import (
	"context"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// RunCrossHandleWake checks that a waiter on one store handle is woken by
// an outcome recorded through another handle on the same database, as
// between two processes. The waiter's resync is a minute, so only the
// store's cross-handle wake (a data_version poll, LISTEN/NOTIFY) can make it
// return in time.
func RunCrossHandleWake(t *testing.T, waiter, writer signals.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wt := signals.NewTree(waiter, signals.WithResync(time.Minute))
	rt := signals.NewTree(writer)
	for i := range 20 {
		root := "cross-" + signals.NewID()
		if _, err := rt.Begin(ctx, root, "s", "main"); err != nil {
			t.Fatal(err)
		}
		w := startWait(ctx, wt, root)
		if i%2 == 0 {
			notDone(t, ctx, wt, root, w)
		}
		if _, err := rt.Record(ctx, root, "main", signals.Outcome{State: signals.Succeeded}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-w:
			if r.err != nil || !r.snap.Complete {
				t.Fatalf("Wait = %+v, %v", r.snap, r.err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: a commit through another handle did not wake the waiter", i)
		}
	}
}
