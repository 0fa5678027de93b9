package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/prism-local/prism/engine"
)

func TestManagerLeasesUpToMaxBatch(t *testing.T) {
	ms := newModels()
	ms.maxBatch = 3
	m := newManager(t, ms)
	var held []*engine.Lease
	var streams []*engine.Stream
	for range 3 {
		l := mustUse(t, m, "a")
		held = append(held, l)
		// Each lease's stream runs while the others are open.
		s, err := l.Engine().Stream(context.Background(), engine.Request{Prompt: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	if st := m.Stats(); st.Leases != 3 || !st.InUse || st.Batch != engine.BatchContinuous || st.MaxBatch != 3 {
		t.Errorf("three leases: stats %+v", st)
	}
	w := useAsync(context.Background(), m, "a", nil)
	waitFor(t, "a fourth caller queued", func() bool { return m.Stats().Waiting == 1 })
	for _, s := range streams {
		text := ""
		for s.Next() {
			text += string(s.Token().Piece)
		}
		if text != "reply from a" {
			t.Errorf("leased stream: %q", text)
		}
	}
	held[0].Release()
	r := <-w
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.lease.Release()
	for _, l := range held[1:] {
		l.Release()
	}
	if st := m.Stats(); st.Leases != 0 || st.InUse || st.Loads != 1 {
		t.Errorf("all released: stats %+v", st)
	}
}

func TestManagerAnotherModelBlocksThoseBehindIt(t *testing.T) {
	ms := newModels()
	ms.maxBatch = 3
	m := newManager(t, ms)
	la := mustUse(t, m, "a")
	wb := useAsync(context.Background(), m, "b", nil)
	waitFor(t, "b queued", func() bool { return m.Stats().Waiting == 1 })
	// A lease on a is free, but b came first: this caller waits behind it.
	wa := useAsync(context.Background(), m, "a", nil)
	waitFor(t, "a queued behind b", func() bool { return m.Stats().Waiting == 2 })
	if ms.backend("a").Stats().Closed {
		t.Fatal("a closed while leased")
	}
	la.Release()
	rb := <-wb
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	if !ms.backend("a").Stats().Closed {
		t.Error("a not closed when b loaded")
	}
	waitFor(t, "a waiting for b's lease", func() bool { return m.Stats().Waiting == 1 })
	rb.lease.Release()
	ra := <-wa
	if ra.err != nil {
		t.Fatal(ra.err)
	}
	defer ra.lease.Release()
	if got := ms.loaded(); !slices.Equal(got, []string{"a", "b", "a"}) {
		t.Errorf("loads %v, want a, b, a", got)
	}
}

func TestManagerUnloadWaitsForEveryLease(t *testing.T) {
	ms := newModels()
	ms.maxBatch = 2
	m := newManager(t, ms)
	l1, l2 := mustUse(t, m, "a"), mustUse(t, m, "a")
	unloaded := make(chan engine.UnloadResult, 1)
	go func() {
		res, _ := m.Unload(context.Background())
		unloaded <- res
	}()
	waitFor(t, "unload queued", func() bool { return m.Stats().Waiting == 1 })
	wa := useAsync(context.Background(), m, "a", nil)
	waitFor(t, "a queued behind the unload", func() bool { return m.Stats().Waiting == 2 })
	l1.Release()
	if ms.backend("a").Stats().Closed {
		t.Fatal("unloaded with a lease still out")
	}
	l2.Release()
	if res := <-unloaded; !res.Unloaded || res.Model != "a" {
		t.Errorf("unload: %+v", res)
	}
	r := <-wa
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.lease.Release()
	if got := ms.loaded(); !slices.Equal(got, []string{"a", "a"}) {
		t.Errorf("loads %v, want a reloaded after the unload", got)
	}
}

func TestManagerCloseWaitsForEveryLease(t *testing.T) {
	ms := newModels()
	ms.maxBatch = 2
	m := newManager(t, ms)
	l1, l2 := mustUse(t, m, "a"), mustUse(t, m, "a")
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	waitFor(t, "close waiting", func() bool { return m.Stats().Waiting == 1 })
	l1.Release()
	if ms.backend("a").Stats().Closed {
		t.Fatal("closed with a lease still out")
	}
	l2.Release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !ms.backend("a").Stats().Closed {
		t.Error("model not unloaded by Close")
	}
}

func TestManagerWaiterLeavingTheHeadLetsSharersIn(t *testing.T) {
	ms := newModels()
	ms.maxBatch = 3
	m := newManager(t, ms)
	la := mustUse(t, m, "a")
	defer la.Release()
	ctx, cancel := context.WithCancel(context.Background())
	wb := useAsync(ctx, m, "b", nil)
	waitFor(t, "b queued", func() bool { return m.Stats().Waiting == 1 })
	wa := useAsync(context.Background(), m, "a", nil)
	waitFor(t, "a queued behind b", func() bool { return m.Stats().Waiting == 2 })
	cancel()
	if r := <-wb; r.err == nil {
		r.lease.Release()
		t.Fatal("b got a lease after its caller left")
	}
	r := <-wa
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.lease.Release()
	if st := m.Stats(); st.Leases != 1 || st.Loads != 1 {
		t.Errorf("stats %+v, want a's first lease only and one load", st)
	}
}
