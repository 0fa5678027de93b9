package signals

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// State is the lifecycle state of one execution node.
type State string

// The node states. Running is the only non-terminal one: a node leaves it
// only when its executor records an outcome, never because of silence,
// timeouts or idleness (PLAT-095).
const (
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	Canceled  State = "canceled"
)

// Terminal reports whether s is an outcome.
func (s State) Terminal() bool { return s == Succeeded || s == Failed || s == Canceled }

// Outcome is what an executor records for its node.
type Outcome struct {
	// State is Succeeded, Failed or Canceled.
	State State `json:"state"`
	// Detail is free text from the executor, such as an error message.
	Detail string `json:"detail,omitempty"`
}

// Node is one execution in a tree rooted at the id of a sent message.
type Node struct {
	// ID is the node's id; a root's id is the id of the message it executes.
	ID string `json:"id"`
	// Parent is the id of the node that started this one; "" for a root.
	Parent string `json:"parent,omitempty"`
	// Root is the id of the tree's root.
	Root string `json:"root"`
	// Session is the session the node runs in.
	Session string `json:"session,omitempty"`
	// Executor names who runs the node; only the executor records its
	// outcome.
	Executor string `json:"executor"`
	// Kind is free text such as "turn", "agent" or "notification".
	Kind string `json:"kind,omitempty"`
	// Notify says the node's completion must be delivered to its parent
	// before the tree is complete. Children default to true.
	Notify bool `json:"notify"`
	// State is Running until the executor records an outcome.
	State State `json:"state"`
	// Detail is the recorded outcome's detail.
	Detail string `json:"detail,omitempty"`
	// CreatedAt is when the node was registered.
	CreatedAt time.Time `json:"created_at"`
	// FinishedAt is when the outcome was recorded.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// NotifiedAt is when the completion was delivered to the parent.
	NotifiedAt *time.Time `json:"notified_at,omitempty"`
}

// Open reports whether n still holds its tree open: it is running, or it is
// a terminal child whose completion has not been delivered to its parent.
func (n Node) Open() bool {
	if !n.State.Terminal() {
		return true
	}
	return n.Parent != "" && n.Notify && n.NotifiedAt == nil
}

// NodeQuery selects nodes for [Store.Nodes]. Exactly one field is set.
type NodeQuery struct {
	// Root selects every node of one tree.
	Root string
	// Session selects every node of every tree that has a root in the
	// session.
	Session string
}

// Snapshot is the projection of one execution tree that waiters and
// monitors both read.
type Snapshot struct {
	// Root is the root node.
	Root Node `json:"root"`
	// Nodes holds the root and all descendants, in creation order.
	Nodes []Node `json:"nodes"`
	// Open lists the ids of nodes that still hold the tree open.
	Open []string `json:"open"`
	// Complete is true when the root and every descendant are terminal and
	// every child completion has been delivered to its parent.
	Complete bool `json:"complete"`
	// Status is a display status: "running", "completing" (root terminal,
	// tree still open), "succeeded", "failed" or "canceled".
	Status string `json:"status"`
}

// Project builds the snapshots of the trees in nodes, one per root, ordered
// by the roots' creation. Nodes whose root is not among nodes are ignored.
func Project(nodes []Node) []Snapshot {
	byRoot := map[string]*Snapshot{}
	var order []string
	sorted := append([]Node(nil), nodes...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreatedAt.Before(sorted[j].CreatedAt) })
	for _, n := range sorted {
		if n.Parent == "" {
			byRoot[n.ID] = &Snapshot{Root: n}
			order = append(order, n.ID)
		}
	}
	for _, n := range sorted {
		if s, ok := byRoot[n.Root]; ok {
			s.Nodes = append(s.Nodes, n)
		}
	}
	out := make([]Snapshot, 0, len(order))
	for _, id := range order {
		s := byRoot[id]
		s.Open = []string{}
		for _, n := range s.Nodes {
			if n.Open() {
				s.Open = append(s.Open, n.ID)
			}
		}
		s.Complete = len(s.Open) == 0
		switch {
		case !s.Root.State.Terminal():
			s.Status = "running"
		case !s.Complete:
			s.Status = "completing"
		default:
			s.Status = string(s.Root.State)
		}
		out = append(out, *s)
	}
	return out
}

// Tree is the exact-identity lifecycle of PLAT-095 over a [Store]: an
// execution tree per sent message, outcomes written only by executors, and a
// waiter that returns only when the exact tree is complete.
type Tree struct {
	store  Store
	resync time.Duration
}

// TreeOption configures a [Tree].
type TreeOption func(*Tree)

// WithResync sets how often a waiter re-reads state without a wake event
// (default one second). Events only shorten the wait; this bound is what a
// lost event costs.
func WithResync(d time.Duration) TreeOption {
	return func(t *Tree) {
		if d > 0 {
			t.resync = d
		}
	}
}

// NewTree returns the lifecycle front over store.
func NewTree(store Store, opts ...TreeOption) *Tree {
	t := &Tree{store: store, resync: time.Second}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Begin registers a root: the execution of the sent message with id root,
// run by executor in session.
func (t *Tree) Begin(ctx context.Context, root, session, executor string) (Node, error) {
	if root == "" || executor == "" {
		return Node{}, Errorf(CodeInvalidArgument, "begin", "root id and executor are required")
	}
	return t.store.AddNode(ctx, Node{ID: root, Session: session, Executor: executor, Kind: "turn", State: Running})
}

// ChildOption configures a child registered with [Tree.Child].
type ChildOption func(*Node)

// Suppressed marks a child whose completion is not delivered to its parent,
// so the tree does not wait for that delivery.
func Suppressed() ChildOption { return func(n *Node) { n.Notify = false } }

// Kind sets the child's kind, such as "agent" or "notification".
func Kind(kind string) ChildOption { return func(n *Node) { n.Kind = kind } }

// Child registers node id as a child of parent, run by executor. Its
// completion must be delivered to the parent (see [Tree.Notified]) unless
// the child is [Suppressed]. A child may be registered under a terminal
// parent, as a notification turn is: it holds the tree open again.
func (t *Tree) Child(ctx context.Context, id, parent, executor string, opts ...ChildOption) (Node, error) {
	if id == "" || parent == "" || executor == "" {
		return Node{}, Errorf(CodeInvalidArgument, "child", "id, parent and executor are required")
	}
	n := Node{ID: id, Parent: parent, Executor: executor, Kind: "agent", Notify: true, State: Running}
	for _, o := range opts {
		o(&n)
	}
	return t.store.AddNode(ctx, n)
}

// Record writes the outcome of node id. Only its executor may; nothing else
// in this package ever writes an outcome.
func (t *Tree) Record(ctx context.Context, id, executor string, o Outcome) (Node, error) {
	if !o.State.Terminal() {
		return Node{}, Errorf(CodeInvalidArgument, "record", "outcome state %q is not terminal; use succeeded, failed or canceled", o.State)
	}
	return t.store.Record(ctx, id, executor, o)
}

// Notified records that child id's completion was delivered to its parent.
func (t *Tree) Notified(ctx context.Context, id string) (Node, error) {
	return t.store.MarkNotified(ctx, id)
}

// Snapshot returns the projection of the tree rooted at root.
func (t *Tree) Snapshot(ctx context.Context, root string) (Snapshot, error) {
	nodes, err := t.store.Nodes(ctx, NodeQuery{Root: root})
	if err != nil {
		return Snapshot{}, err
	}
	for _, s := range Project(nodes) {
		if s.Root.ID == root {
			return s, nil
		}
	}
	return Snapshot{}, Errorf(CodeNotFound, "snapshot", "no execution root %q", root)
}

// Monitor returns the projections of every tree rooted in session: the same
// records a waiter reads.
func (t *Tree) Monitor(ctx context.Context, session string) ([]Snapshot, error) {
	nodes, err := t.store.Nodes(ctx, NodeQuery{Session: session})
	if err != nil {
		return nil, err
	}
	return Project(nodes), nil
}

// Wait returns when the tree rooted at root is complete: the root and every
// descendant are terminal and every child completion has been delivered to
// its parent. Nothing outside that tree affects it. A root that failed or
// was canceled returns the snapshot with an ErrTurnFailed error. Events only
// wake the waiter; it re-reads the state on every wake and at least every
// resync interval, so a lost event costs latency, never correctness. When
// ctx ends first, Wait returns ctx's error and writes nothing.
func (t *Tree) Wait(ctx context.Context, root string) (Snapshot, error) {
	wake, stop := t.store.Watch(TreeKey(root))
	defer stop()
	timer := time.NewTimer(t.resync)
	defer timer.Stop()
	for {
		snap, err := t.Snapshot(ctx, root)
		if err != nil {
			return snap, err
		}
		if snap.Complete {
			if snap.Root.State != Succeeded {
				return snap, &Error{code: CodeTurnFailed, Op: "wait",
					Msg: fmt.Sprintf("turn %s ended %s: %s", root, snap.Root.State, snap.Root.Detail)}
			}
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return snap, ctx.Err()
		case <-wake:
		case <-timer.C:
		}
		timer.Reset(t.resync)
	}
}
