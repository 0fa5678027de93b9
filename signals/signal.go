package signals

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Method is how a signal reached its recipient: the delivery_method taxonomy
// of SPEC-037 §5 plus the explicit poll.
type Method string

// The delivery methods. Only a real delivery writes one, together with
// delivered_at (SPEC-037 §2).
const (
	// MethodPiggyback: drained into the response of a bootstrapped,
	// non-lifecycle verb (SPEC-037 §1).
	MethodPiggyback Method = "piggyback"
	// MethodStartupDrain: drained by a session pickup (hd_exec).
	MethodStartupDrain Method = "startup_drain"
	// MethodBroadcast: delivered by a broadcast transport.
	MethodBroadcast Method = "broadcast"
	// MethodChannelsPush: delivered by a real server push.
	MethodChannelsPush Method = "channels_push"
	// MethodSubscriberBuffer: delivered from a client-side strategy buffer.
	MethodSubscriberBuffer Method = "subscriber_buffer"
	// MethodPoll: drained by the explicit pending verb (SPEC-037 §4).
	MethodPoll Method = "poll"
)

// Valid reports whether m is one of the known methods.
func (m Method) Valid() bool {
	switch m {
	case MethodPiggyback, MethodStartupDrain, MethodBroadcast, MethodChannelsPush,
		MethodSubscriberBuffer, MethodPoll:
		return true
	}
	return false
}

// Mode selects what a drain writes.
type Mode int

const (
	// LeaseAndAck (the default) gives each drained signal a delivery id and a
	// lease. Only a confirmation (an ack of the delivery id, or the agent's
	// next verb call in the same session) writes delivered_at. A signal whose
	// lease runs out unconfirmed is drained again, with the same signal id.
	// Guarantee: at least once; exactly once after de-duplication by id.
	LeaseAndAck Mode = iota
	// MarkOnDrain is plain SPEC-037: the drain itself writes delivered_at.
	// Guarantee: at most once; a crash between the drain and the response
	// reaching the agent loses the drained signals.
	MarkOnDrain
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case LeaseAndAck:
		return "lease_and_ack"
	case MarkOnDrain:
		return "mark_on_drain"
	}
	return "unknown"
}

// Message is what a sender hands to Send.
type Message struct {
	// From is the sender's identity.
	From string `json:"from"`
	// To is the recipient's identity. Required.
	To string `json:"to"`
	// Type is the signal's type, chosen by the agents. Required.
	Type string `json:"type"`
	// Payload is a JSON value; empty means null.
	Payload json.RawMessage `json:"payload,omitempty"`
	// IdempotencyKey, when set, makes Send return the signal already sent by
	// From with the same key instead of queueing a second one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Signal is one queued agent-to-agent message and its delivery record.
type Signal struct {
	// ID is the signal's stable id; clients de-duplicate by it.
	ID string `json:"id"`
	// From is the sender's identity.
	From string `json:"from"`
	// To is the recipient's identity.
	To string `json:"to"`
	// Type is the signal's type.
	Type string `json:"type"`
	// Payload is the signal's JSON payload.
	Payload json.RawMessage `json:"payload"`
	// IdempotencyKey is the sender's key, if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// CreatedAt is when the signal was queued.
	CreatedAt time.Time `json:"created_at"`
	// DeliveredAt is nil until a real delivery (SPEC-037 §2): the drain in
	// MarkOnDrain mode, the confirmation in LeaseAndAck mode.
	DeliveredAt *time.Time `json:"delivered_at"`
	// DeliveryMethod is the method of the last drain, or "" if never drained.
	DeliveryMethod Method `json:"delivery_method,omitempty"`
	// DeliveryID identifies the last drain that handed the signal out; an ack
	// of it confirms the delivery.
	DeliveryID string `json:"delivery_id,omitempty"`
	// LeaseUntil is when an unconfirmed drain's lease runs out.
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	// Attempts counts the drains that handed the signal out.
	Attempts int `json:"attempts"`
}

// Delivered reports whether the signal's delivery has been recorded.
func (s Signal) Delivered() bool { return s.DeliveredAt != nil }

// Depth is the observable queue depth of one identity.
type Depth struct {
	// Identity is the recipient.
	Identity string `json:"identity"`
	// Pending counts undelivered signals no live lease holds.
	Pending int `json:"pending"`
	// Leased counts signals drained in LeaseAndAck mode whose lease is live
	// and which are not yet confirmed.
	Leased int `json:"leased"`
}

// Undelivered is Pending + Leased: every signal without delivered_at.
func (d Depth) Undelivered() int { return d.Pending + d.Leased }

// NewID returns a 128-bit id in hex: 48 bits of Unix milliseconds followed
// by 80 random bits. Signals, deliveries and sessions use it. The time prefix
// makes ids created later sort later (within a millisecond the order is
// random), so a unique index on them grows at its right edge instead of
// touching a random page per insert; the random part keeps ids unguessable
// and unique across processes.
func NewID() string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
