package signals

import (
	"context"
	"time"
)

// Store is the driver interface the stores implement (memory, sqlite,
// postgres). Users work with [Queue], [Router] and [Tree] over it; store
// authors check their implementation with signalstest.Run.
//
// Inputs reach a Store already validated by the front types. Every method
// must be safe for concurrent use, also across processes sharing the same
// database.
type Store interface {
	// Insert queues msgs in order and returns their signals. A message with
	// an idempotency key that From already used returns the existing signal
	// unchanged. Insert never writes delivered_at.
	Insert(ctx context.Context, msgs []Message) ([]Signal, error)
	// Claim atomically takes up to c.Limit of the oldest undelivered signals
	// of c.Identity that no live lease holds and stamps them with
	// c.DeliveryID, c.Method and one more attempt. In MarkOnDrain mode it
	// also writes delivered_at; in LeaseAndAck mode it sets a lease of
	// c.Lease instead. Among any number of concurrent claimers, in any
	// number of processes, each signal is handed to exactly one claim per
	// lease. The result is ordered oldest first. c.Confirm, if set, is
	// applied first, atomically with the claim.
	Claim(ctx context.Context, c Claim) ([]Signal, error)
	// Confirm writes delivered_at on the signals of identity still held by
	// one of deliveryIDs and not yet delivered, and returns how many it
	// confirmed. A delivery id whose lease ran out and whose signals were
	// claimed again confirms nothing.
	Confirm(ctx context.Context, identity string, deliveryIDs []string) (int, error)
	// Depth returns identity's queue depth.
	Depth(ctx context.Context, identity string) (Depth, error)
	// Signal returns one signal by id, or an ErrNotFound error.
	Signal(ctx context.Context, id string) (Signal, error)

	// CreateSession records a new session.
	CreateSession(ctx context.Context, s Session) error
	// Session returns a session by id, or an ErrNotFound error.
	Session(ctx context.Context, id string) (Session, error)
	// EndSession sets the session's EndedAt; ending an ended session is a
	// no-op.
	EndSession(ctx context.Context, id string) error

	// AddNode registers an execution node. A node with a Parent takes the
	// parent's Root; a node without one is a root (Root = ID). A missing
	// parent is ErrNotFound, a taken id ErrAlreadyExists.
	AddNode(ctx context.Context, n Node) (Node, error)
	// Record writes the outcome of node id. Only the node's executor may
	// record (else ErrNotExecutor); a second, different outcome is
	// ErrOutcomeConflict, the same one again a no-op.
	Record(ctx context.Context, id, executor string, o Outcome) (Node, error)
	// MarkNotified records that node id's completion was delivered to its
	// parent. The node must be terminal (else ErrNotTerminal).
	MarkNotified(ctx context.Context, id string) (Node, error)
	// Nodes returns the nodes matching q, ordered by creation.
	Nodes(ctx context.Context, q NodeQuery) ([]Node, error)

	// Watch returns a channel that receives a value (coalesced, never
	// blocking the writer) whenever something under key may have changed,
	// and a function that stops the watch. Keys are made by [TreeKey] and
	// [InboxKey]. A watch may miss changes made by other processes for a
	// while; readers re-read state on every wake and poll as a safety net.
	Watch(key string) (<-chan struct{}, func())

	// Close releases the store's resources and stops its goroutines.
	Close() error
}

// Claim is one drain request as a [Store] sees it.
type Claim struct {
	// Identity is the recipient whose queue is drained.
	Identity string
	// DeliveryID stamps every claimed signal.
	DeliveryID string
	// Method is the delivery method recorded on the claimed signals.
	Method Method
	// Mode selects lease-and-ack or mark-on-drain.
	Mode Mode
	// Lease is the lease length in LeaseAndAck mode.
	Lease time.Duration
	// Limit caps the number of signals claimed; it is always positive.
	Limit int
	// Confirm lists earlier delivery ids of Identity to confirm, as
	// [Store.Confirm] does, in the same transaction before claiming.
	Confirm []string
}

// Session is one agent session of an identity, begun by start (or by a
// pickup) and ended by wrap.
type Session struct {
	// ID is the session's id.
	ID string `json:"id"`
	// Identity is the agent identity the session belongs to.
	Identity string `json:"identity"`
	// StartedAt is when the session was registered.
	StartedAt time.Time `json:"started_at"`
	// EndedAt is set by wrap.
	EndedAt *time.Time `json:"ended_at,omitempty"`
}

// Active reports whether the session has not ended.
func (s Session) Active() bool { return s.EndedAt == nil }

// InboxKey is the watch key of identity's signal queue.
func InboxKey(identity string) string { return "inbox/" + identity }

// TreeKey is the watch key of the execution tree rooted at root.
func TreeKey(root string) string { return "tree/" + root }
