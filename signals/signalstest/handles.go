package signalstest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// RunCrossHandleWake checks that a waiter on one store handle is woken by
// an outcome recorded through another handle on the same database, as
// between two processes. The waiter's resync is a minute, so only the
// store's cross-handle wake (a data_version poll, LISTEN/NOTIFY) can make it
// return in time. Each outcome is recorded only once the waiter is known to
// be waiting (subscribed, and past its first read of the running tree), so
// the waiter cannot just read the finished tree without a wake.
func RunCrossHandleWake(t *testing.T, waiter, writer signals.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	probe := newWaitProbe(waiter)
	wt := signals.NewTree(probe, signals.WithResync(time.Minute))
	rt := signals.NewTree(writer)
	for i := range 20 {
		root := "cross-" + signals.NewID()
		if _, err := rt.Begin(ctx, root, "s", "main"); err != nil {
			t.Fatal(err)
		}
		waiting := probe.arm()
		w := startWait(ctx, wt, root)
		select {
		case <-waiting:
		case r := <-w:
			t.Fatalf("round %d: Wait returned before the outcome: %+v, %v", i, r.snap, r.err)
		}
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

// waitProbe wraps a waiter's store so that a test knows when Tree.Wait is
// waiting: it has subscribed (Watch returned) and then read the tree. From
// that moment a commit can reach the waiter only through a wake.
type waitProbe struct {
	signals.Store
	mu      sync.Mutex
	live    int           // watches not yet stopped
	waiting chan struct{} // closed by the first read under a live watch
}

func newWaitProbe(s signals.Store) *waitProbe { return &waitProbe{Store: s} }

// arm returns a channel closed once a waiter has subscribed and read.
func (p *waitProbe) arm() <-chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	p.waiting = ch
	p.mu.Unlock()
	return ch
}

func (p *waitProbe) Watch(key string) (<-chan struct{}, func()) {
	ch, stop := p.Store.Watch(key)
	p.mu.Lock()
	p.live++
	p.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			p.mu.Lock()
			p.live--
			p.mu.Unlock()
			stop()
		})
	}
}

func (p *waitProbe) Nodes(ctx context.Context, q signals.NodeQuery) ([]signals.Node, error) {
	nodes, err := p.Store.Nodes(ctx, q)
	p.mu.Lock()
	if p.live > 0 && p.waiting != nil {
		close(p.waiting)
		p.waiting = nil
	}
	p.mu.Unlock()
	return nodes, err
}
