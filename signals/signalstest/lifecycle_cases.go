package signalstest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// RunLifecycle checks the exact-identity lifecycle tree: the PLAT-095
// regression cases by name, executor-only outcomes, the shared projection
// and the waiter's wake behaviour.
func RunLifecycle(t *testing.T, open Opener, opts Options) {
	opts.defaults()
	cases := []struct {
		name string
		run  func(t *testing.T, store signals.Store)
	}{
		{"PLAT095_UnrelatedCompletedTurnCannotCompleteTarget", plat095Unrelated},
		{"PLAT095_RecursiveDescendantsHoldTargetOpen", plat095Recursive},
		{"PLAT095_CompletedChildLiveUntilParentNotified", plat095ChildNotification},
		{"PLAT095_RootFailureIsFailedTurn", plat095RootFailure},
		{"PLAT095_UnrecordedCommandGetsNoOutcome", plat095Unrecorded},
		{"PLAT095_WaiterAndMonitorShareOneProjection", plat095Projection},
		{"OnlyTheExecutorRecords", testExecutorOnly},
		{"RegistrationErrors", testRegistration},
		{"WaitWakesOnLastEvent", testWaitWakes},
		{"LostEventCostsOnlyLatency", testLostEvent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

type waitResult struct {
	snap signals.Snapshot
	err  error
}

func startWait(ctx context.Context, tree *signals.Tree, root string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		s, err := tree.Wait(ctx, root)
		ch <- waitResult{s, err}
	}()
	return ch
}

// notDone checks that the waiter has not returned, and that the tree is not
// complete in the store.
func notDone(t *testing.T, ctx context.Context, tree *signals.Tree, root string, w <-chan waitResult) {
	t.Helper()
	if s := need(tree.Snapshot(ctx, root))(t); s.Complete {
		t.Fatalf("tree %s complete too early: open=%v", root, s.Open)
	}
	select {
	case r := <-w:
		t.Fatalf("Wait returned early: %+v, %v", r.snap.Open, r.err)
	default:
	}
}

func done(t *testing.T, w <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-w:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return after the tree completed")
	}
	return waitResult{}
}

func ok(state signals.State) signals.Outcome { return signals.Outcome{State: state} }

func plat095Unrelated(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store, signals.WithResync(20*time.Millisecond))
	need(tree.Begin(ctx, "q-target", "s1", "main"))(t)
	need(tree.Begin(ctx, "q-other", "s1", "main"))(t)
	need(tree.Child(ctx, "q-other-child", "q-other", "worker"))(t)
	w := startWait(ctx, tree, "q-target")
	need(tree.Record(ctx, "q-other-child", "worker", ok(signals.Succeeded)))(t)
	need(tree.Notified(ctx, "q-other-child"))(t)
	need(tree.Record(ctx, "q-other", "main", ok(signals.Succeeded)))(t)
	if s := need(tree.Snapshot(ctx, "q-other"))(t); !s.Complete {
		t.Fatal("unrelated tree should be complete")
	}
	notDone(t, ctx, tree, "q-target", w)
	need(tree.Record(ctx, "q-target", "main", ok(signals.Succeeded)))(t)
	if r := done(t, w); r.err != nil || !r.snap.Complete || r.snap.Root.ID != "q-target" {
		t.Fatalf("Wait = %+v, %v", r.snap, r.err)
	}
}

func plat095Recursive(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store, signals.WithResync(20*time.Millisecond))
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	need(tree.Child(ctx, "a", "q1", "agent-a"))(t)
	need(tree.Child(ctx, "a.b", "a", "agent-b"))(t)
	need(tree.Child(ctx, "a.b.c", "a.b", "agent-c"))(t)
	w := startWait(ctx, tree, "q1")
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t)
	if s := need(tree.Snapshot(ctx, "q1"))(t); s.Status != "completing" || len(s.Open) != 3 {
		t.Fatalf("snapshot %+v", s)
	}
	for _, n := range []struct{ id, exec string }{{"a", "agent-a"}, {"a.b", "agent-b"}} {
		need(tree.Record(ctx, n.id, n.exec, ok(signals.Succeeded)))(t)
		need(tree.Notified(ctx, n.id))(t)
	}
	notDone(t, ctx, tree, "q1", w) // the grandchild still runs
	need(tree.Record(ctx, "a.b.c", "agent-c", ok(signals.Succeeded)))(t)
	notDone(t, ctx, tree, "q1", w) // its completion is not yet delivered
	need(tree.Notified(ctx, "a.b.c"))(t)
	if r := done(t, w); r.err != nil || r.snap.Status != "succeeded" || len(r.snap.Nodes) != 4 {
		t.Fatalf("Wait = %+v, %v", r.snap, r.err)
	}
}

func plat095ChildNotification(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store, signals.WithResync(20*time.Millisecond))
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	need(tree.Child(ctx, "bg", "q1", "agent"))(t)
	need(tree.Child(ctx, "quiet", "q1", "agent", signals.Suppressed()))(t)
	w := startWait(ctx, tree, "q1")
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t)
	need(tree.Record(ctx, "quiet", "agent", ok(signals.Succeeded)))(t)
	need(tree.Record(ctx, "bg", "agent", ok(signals.Succeeded)))(t)
	s := need(tree.Snapshot(ctx, "q1"))(t)
	if len(s.Open) != 1 || s.Open[0] != "bg" {
		t.Fatalf("open %v, want the un-notified child only", s.Open)
	}
	notDone(t, ctx, tree, "q1", w)
	// The main agent processes the child's result in a notification turn
	// linked to the child's parent: the tree stays open through it.
	need(tree.Child(ctx, "bg-notify", "q1", "main", signals.Kind("notification"), signals.Suppressed()))(t)
	need(tree.Notified(ctx, "bg"))(t)
	notDone(t, ctx, tree, "q1", w)
	need(tree.Record(ctx, "bg-notify", "main", ok(signals.Succeeded)))(t)
	if r := done(t, w); r.err != nil {
		t.Fatal(r.err)
	}
	if _, err := tree.Notified(ctx, "missing"); !errors.Is(err, signals.ErrNotFound) {
		t.Fatalf("notify unknown: %v", err)
	}
}

func plat095RootFailure(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store, signals.WithResync(20*time.Millisecond))
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	w := startWait(ctx, tree, "q1")
	need(tree.Record(ctx, "q1", "main", signals.Outcome{State: signals.Failed, Detail: "tool crashed"}))(t)
	r := done(t, w)
	if !errors.Is(r.err, signals.ErrTurnFailed) || r.snap.Status != "failed" || r.snap.Root.Detail != "tool crashed" {
		t.Fatalf("Wait = %+v, %v; want a failed turn", r.snap, r.err)
	}
}

func plat095Unrecorded(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store, signals.WithResync(5*time.Millisecond))
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	need(tree.Child(ctx, "publish", "q1", "agent", signals.Kind("command")))(t)
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t)
	// The waiter gives up (timeout, interruption): nothing is written.
	wctx, cancel := context.WithTimeout(ctx, 60*time.Millisecond)
	defer cancel()
	if _, err := tree.Wait(wctx, "q1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the deadline", err)
	}
	// A new tree handle over the same store (a restart) reads the same.
	again := signals.NewTree(store)
	s := need(again.Snapshot(ctx, "q1"))(t)
	for _, n := range s.Nodes {
		if n.ID == "publish" && (n.State != signals.Running || n.Detail != "" || n.FinishedAt != nil) {
			t.Fatalf("unrecorded command got an outcome: %+v", n)
		}
	}
	if s.Complete {
		t.Fatal("tree complete with an unrecorded command")
	}
}

func plat095Projection(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store, signals.WithResync(20*time.Millisecond))
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	need(tree.Child(ctx, "c1", "q1", "agent"))(t)
	need(tree.Begin(ctx, "q2", "s1", "main"))(t)
	need(tree.Begin(ctx, "q3", "s2", "main"))(t)
	mon := need(tree.Monitor(ctx, "s1"))(t)
	if len(mon) != 2 || mon[0].Root.ID != "q1" || mon[1].Root.ID != "q2" {
		t.Fatalf("monitor roots %+v", mon)
	}
	snap := need(tree.Snapshot(ctx, "q1"))(t)
	if !reflect.DeepEqual(stripTimes(mon[0]), stripTimes(snap)) {
		t.Fatalf("monitor %+v\nwaiter %+v", mon[0], snap)
	}
	need(tree.Record(ctx, "c1", "agent", ok(signals.Succeeded)))(t)
	need(tree.Notified(ctx, "c1"))(t)
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t)
	w := need(tree.Wait(ctx, "q1"))(t)
	mon = need(tree.Monitor(ctx, "s1"))(t)
	if !reflect.DeepEqual(stripTimes(mon[0]), stripTimes(w)) || mon[1].Status != "running" {
		t.Fatalf("after completion monitor %+v\nwaiter %+v", mon, w)
	}
}

// stripTimes drops the time fields, whose precision differs by store.
func stripTimes(s signals.Snapshot) signals.Snapshot {
	clean := func(n signals.Node) signals.Node {
		n.CreatedAt = time.Time{}
		n.FinishedAt = nil
		n.NotifiedAt = nil
		return n
	}
	s.Root = clean(s.Root)
	nodes := make([]signals.Node, len(s.Nodes))
	for i, n := range s.Nodes {
		nodes[i] = clean(n)
	}
	s.Nodes = nodes
	return s
}

func testExecutorOnly(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store)
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	if _, err := tree.Record(ctx, "q1", "scheduler", ok(signals.Failed)); !errors.Is(err, signals.ErrNotExecutor) {
		t.Fatalf("foreign record: %v", err)
	}
	if _, err := tree.Record(ctx, "q1", "main", ok(signals.Running)); !errors.Is(err, signals.ErrInvalidArgument) {
		t.Fatalf("non-terminal record: %v", err)
	}
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t)
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t) // same again: no-op
	if _, err := tree.Record(ctx, "q1", "main", ok(signals.Failed)); !errors.Is(err, signals.ErrOutcomeConflict) {
		t.Fatalf("second outcome: %v", err)
	}
	if s := need(tree.Snapshot(ctx, "q1"))(t); s.Root.State != signals.Succeeded || s.Root.FinishedAt == nil {
		t.Fatalf("root %+v", s.Root)
	}
}

func testRegistration(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(store)
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	if _, err := tree.Begin(ctx, "q1", "s1", "main"); !errors.Is(err, signals.ErrAlreadyExists) {
		t.Fatalf("duplicate root: %v", err)
	}
	if _, err := tree.Child(ctx, "c", "nope", "x"); !errors.Is(err, signals.ErrNotFound) {
		t.Fatalf("orphan child: %v", err)
	}
	c := need(tree.Child(ctx, "c", "q1", "x"))(t)
	if c.Root != "q1" || c.Session != "s1" || !c.Notify || c.State != signals.Running {
		t.Fatalf("child %+v", c)
	}
	if _, err := tree.Notified(ctx, "c"); !errors.Is(err, signals.ErrNotTerminal) {
		t.Fatalf("notify running child: %v", err)
	}
	if _, err := tree.Snapshot(ctx, "c"); !errors.Is(err, signals.ErrNotFound) {
		t.Fatalf("snapshot of a non-root: %v", err)
	}
	if _, err := tree.Wait(ctx, "unknown"); !errors.Is(err, signals.ErrNotFound) {
		t.Fatalf("wait unknown root: %v", err)
	}
}

func testWaitWakes(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	// A long resync: only the wake event can make this fast.
	tree := signals.NewTree(store, signals.WithResync(time.Minute))
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	w := startWait(ctx, tree, "q1")
	notDone(t, ctx, tree, "q1", w)
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t)
	select {
	case r := <-w:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the completing event did not wake the waiter")
	}
}

// deafStore drops every wake event.
type deafStore struct{ signals.Store }

func (deafStore) Watch(string) (<-chan struct{}, func()) { return nil, func() {} }

func testLostEvent(t *testing.T, store signals.Store) {
	ctx := ctxFor(t)
	tree := signals.NewTree(deafStore{store}, signals.WithResync(10*time.Millisecond))
	need(tree.Begin(ctx, "q1", "s1", "main"))(t)
	w := startWait(ctx, tree, "q1")
	notDone(t, ctx, tree, "q1", w)
	need(tree.Record(ctx, "q1", "main", ok(signals.Succeeded)))(t)
	if r := done(t, w); r.err != nil || !r.snap.Complete {
		t.Fatalf("Wait = %+v, %v", r.snap, r.err)
	}
}
