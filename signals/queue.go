package signals

import (
	"context"
	"encoding/json"
	"time"
)

// DefaultLease is the lease a LeaseAndAck drain gives its signals unless
// configured otherwise.
const DefaultLease = 30 * time.Second

// DefaultLimit is the largest batch one drain takes unless configured
// otherwise; the rest stays queued for the next drain.
const DefaultLimit = 100

// Queue is the signal queue over a [Store]: send, drain, confirm, observe.
// Send never marks delivery; a drain takes an identity's undelivered signals
// exactly once among any number of concurrent drainers; there is no expiry
// (SPEC-041 Q2).
type Queue struct {
	store Store
}

// NewQueue returns the queue over store.
func NewQueue(store Store) *Queue { return &Queue{store: store} }

// Store returns the store the queue works on.
func (q *Queue) Store() Store { return q.store }

func validMessage(m *Message) error {
	if m.To == "" {
		return Errorf(CodeInvalidArgument, "send", "recipient identity (to) is required")
	}
	if m.Type == "" {
		return Errorf(CodeInvalidArgument, "send", "signal type is required")
	}
	if len(m.Payload) == 0 {
		m.Payload = json.RawMessage("null")
	}
	if !json.Valid(m.Payload) {
		return Errorf(CodeInvalidArgument, "send", "payload is not valid JSON")
	}
	return nil
}

// Send queues one signal and returns it with delivered_at unset (SPEC-037
// §2). A message whose IdempotencyKey From already used returns the signal
// sent then.
func (q *Queue) Send(ctx context.Context, m Message) (Signal, error) {
	out, err := q.SendBatch(ctx, []Message{m})
	if err != nil {
		return Signal{}, err
	}
	return out[0], nil
}

// SendBatch queues msgs in one transaction, in order.
func (q *Queue) SendBatch(ctx context.Context, msgs []Message) ([]Signal, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	cp := append([]Message(nil), msgs...)
	for i := range cp {
		if err := validMessage(&cp[i]); err != nil {
			return nil, err
		}
	}
	return q.store.Insert(ctx, cp)
}

// DrainOptions configures one drain.
type DrainOptions struct {
	// Method is recorded as the delivery method; default MethodPoll.
	Method Method
	// Mode is LeaseAndAck (default) or MarkOnDrain.
	Mode Mode
	// Lease is the lease length in LeaseAndAck mode; default DefaultLease.
	Lease time.Duration
	// Limit caps the batch; default DefaultLimit.
	Limit int
	// Ack lists delivery ids of earlier drains to confirm in the same
	// transaction, so that a consumer loop pays one write per batch.
	Ack []string
}

// Drain atomically takes identity's oldest undelivered signals that no live
// lease holds. All returned signals share one DeliveryID; in LeaseAndAck
// mode pass it to [Queue.Ack] once the signals reached the agent.
func (q *Queue) Drain(ctx context.Context, identity string, o DrainOptions) ([]Signal, error) {
	if identity == "" {
		return nil, Errorf(CodeInvalidArgument, "drain", "identity is required")
	}
	if o.Method == "" {
		o.Method = MethodPoll
	}
	if !o.Method.Valid() {
		return nil, Errorf(CodeInvalidArgument, "drain", "unknown delivery method %q", o.Method)
	}
	if o.Mode != LeaseAndAck && o.Mode != MarkOnDrain {
		return nil, Errorf(CodeInvalidArgument, "drain", "unknown mode %d", o.Mode)
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	return q.store.Claim(ctx, Claim{
		Identity: identity, DeliveryID: NewID(), Method: o.Method, Mode: o.Mode, Lease: o.Lease, Limit: o.Limit,
		Confirm: nonEmpty(o.Ack),
	})
}

func nonEmpty(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}

// Ack confirms deliveries of identity's signals: it writes delivered_at on
// the signals still held by deliveryIDs and returns how many it confirmed.
func (q *Queue) Ack(ctx context.Context, identity string, deliveryIDs ...string) (int, error) {
	if identity == "" {
		return 0, Errorf(CodeInvalidArgument, "ack", "identity is required")
	}
	ids := nonEmpty(deliveryIDs)
	if len(ids) == 0 {
		return 0, nil
	}
	return q.store.Confirm(ctx, identity, ids)
}

// Depth returns identity's queue depth.
func (q *Queue) Depth(ctx context.Context, identity string) (Depth, error) {
	if identity == "" {
		return Depth{}, Errorf(CodeInvalidArgument, "depth", "identity is required")
	}
	return q.store.Depth(ctx, identity)
}

// Get returns one signal by id.
func (q *Queue) Get(ctx context.Context, id string) (Signal, error) {
	return q.store.Signal(ctx, id)
}
