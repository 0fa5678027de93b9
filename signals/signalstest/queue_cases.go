package signalstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// RunQueue checks the queue contract: send never marks delivery, idempotency
// keys, drains in both modes, leases, acks, depth, ordering and isolation.
func RunQueue(t *testing.T, open Opener, opts Options) {
	opts.defaults()
	cases := []struct {
		name string
		run  func(t *testing.T, q *signals.Queue, opts Options)
	}{
		{"SendNeverMarksDelivery", testSendNeverMarks},
		{"PayloadRoundTrip", testPayloadRoundTrip},
		{"IdempotencyKeyReturnsSameSignal", testIdempotency},
		{"MarkOnDrainMarksOnce", testMarkOnDrain},
		{"LeaseDrainWritesNothingUntilAck", testLeaseAck},
		{"UnconfirmedLeaseRedeliversSameID", testRedelivery},
		{"AckOfSupersededDeliveryConfirmsNothing", testSupersededAck},
		{"OldestFirstWithLimit", testOrderLimit},
		{"DepthIsObservable", testDepth},
		{"IdentitiesAreIsolated", testIsolation},
		{"UnknownSignalIsNotFound", testNotFound},
		{"DrainConfirmsEarlierDeliveryAtomically", testDrainWithAck},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, signals.NewQueue(open(t)), opts)
		})
	}
}

func testSendNeverMarks(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	s := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "hello", IdempotencyKey: "k"}))(t)
	if s.ID == "" || s.DeliveredAt != nil || s.DeliveryMethod != "" || s.Attempts != 0 {
		t.Fatalf("sent signal = %+v, want an id and no delivery record", s)
	}
	got := need(q.Get(ctx, s.ID))(t)
	if got.DeliveredAt != nil || got.CreatedAt.IsZero() {
		t.Fatalf("stored signal = %+v, want created_at and no delivered_at", got)
	}
	// What Send returns is what the store holds (a store may build the
	// returned signal from the message instead of reading the row back).
	if !sameSignal(s, got) {
		t.Fatalf("sent signal = %+v, stored %+v", s, got)
	}
	if string(got.Payload) != "null" {
		t.Fatalf("empty payload stored as %s, want null", got.Payload)
	}
}

func testPayloadRoundTrip(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	payload := json.RawMessage(`{"b":[1,2,{"c":"ü\n"}],"a":null}`)
	s := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t", Payload: payload}))(t)
	got := need(q.Drain(ctx, "b", signals.DrainOptions{Mode: signals.MarkOnDrain}))(t)
	if len(got) != 1 || got[0].ID != s.ID {
		t.Fatalf("drained %v, want [%s]", ids(got), s.ID)
	}
	var want, have any
	_ = json.Unmarshal(payload, &want)
	if err := json.Unmarshal(got[0].Payload, &have); err != nil || fmt.Sprint(want) != fmt.Sprint(have) {
		t.Fatalf("payload %s, want %s (%v)", got[0].Payload, payload, err)
	}
	if got[0].From != "a" || got[0].To != "b" || got[0].Type != "t" {
		t.Fatalf("drained %+v", got[0])
	}
	if _, err := q.Send(ctx, signals.Message{To: "b", Type: "t", Payload: json.RawMessage("{")}); !errors.Is(err, signals.ErrInvalidArgument) {
		t.Fatalf("invalid payload: err = %v, want invalid_argument", err)
	}
	if _, err := q.Send(ctx, signals.Message{Type: "t"}); !errors.Is(err, signals.ErrInvalidArgument) {
		t.Fatalf("missing recipient: err = %v, want invalid_argument", err)
	}
}

func testIdempotency(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	m := signals.Message{From: "a", To: "b", Type: "t", IdempotencyKey: "k1"}
	s1 := need(q.Send(ctx, m))(t)
	m.Payload = json.RawMessage(`"different"`)
	s2 := need(q.Send(ctx, m))(t)
	if s1.ID != s2.ID {
		t.Fatalf("same key gave %s then %s", s1.ID, s2.ID)
	}
	other := need(q.Send(ctx, signals.Message{From: "c", To: "b", Type: "t", IdempotencyKey: "k1"}))(t)
	if other.ID == s1.ID {
		t.Fatal("another sender's key collided")
	}
	batch := need(q.SendBatch(ctx, []signals.Message{
		{From: "a", To: "b", Type: "t", IdempotencyKey: "k1"},
		{From: "a", To: "b", Type: "t", IdempotencyKey: "k2"},
	}))(t)
	if batch[0].ID != s1.ID || batch[1].ID == s1.ID {
		t.Fatalf("batch ids %v", ids(batch))
	}
	d := need(q.Depth(ctx, "b"))(t)
	if d.Pending != 3 {
		t.Fatalf("depth %+v, want 3 pending", d)
	}
	// A key stays bound after delivery.
	need(q.Drain(ctx, "b", signals.DrainOptions{Mode: signals.MarkOnDrain}))(t)
	if again := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t", IdempotencyKey: "k1"}))(t); again.ID != s1.ID || again.DeliveredAt == nil {
		t.Fatalf("resend after delivery = %+v, want the delivered signal %s", again, s1.ID)
	}
	// A key repeated inside one batch queues one signal; the batch keeps
	// its order.
	dup := need(q.SendBatch(ctx, []signals.Message{
		{From: "a", To: "b", Type: "t", Payload: json.RawMessage(`1`), IdempotencyKey: "k4"},
		{From: "a", To: "b", Type: "t", Payload: json.RawMessage(`2`)},
		{From: "a", To: "b", Type: "t", Payload: json.RawMessage(`3`), IdempotencyKey: "k4"},
		{From: "a", To: "b", Type: "t", Payload: json.RawMessage(`4`)},
	}))(t)
	if dup[0].ID != dup[2].ID || string(dup[2].Payload) != "1" || dup[1].ID == dup[0].ID || dup[3].ID == dup[1].ID {
		t.Fatalf("batch with a repeated key gave %v", ids(dup))
	}
	if got := need(q.Drain(ctx, "b", signals.DrainOptions{Mode: signals.MarkOnDrain}))(t); len(got) != 3 ||
		got[0].ID != dup[0].ID || got[1].ID != dup[1].ID || got[2].ID != dup[3].ID {
		t.Fatalf("drained %v, want %v in batch order", ids(got), []string{dup[0].ID, dup[1].ID, dup[3].ID})
	}
}

func testMarkOnDrain(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	s := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t"}))(t)
	got := need(q.Drain(ctx, "b", signals.DrainOptions{Mode: signals.MarkOnDrain, Method: signals.MethodPiggyback}))(t)
	if len(got) != 1 || got[0].ID != s.ID || got[0].DeliveredAt == nil || got[0].DeliveryMethod != signals.MethodPiggyback || got[0].Attempts != 1 {
		t.Fatalf("drained %+v", got)
	}
	if again := need(q.Drain(ctx, "b", signals.DrainOptions{Mode: signals.MarkOnDrain}))(t); len(again) != 0 {
		t.Fatalf("second drain got %v", ids(again))
	}
	stored := need(q.Get(ctx, s.ID))(t)
	if stored.DeliveredAt == nil || stored.DeliveryMethod != signals.MethodPiggyback {
		t.Fatalf("stored %+v", stored)
	}
}

func testLeaseAck(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	s := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t"}))(t)
	got := need(q.Drain(ctx, "b", signals.DrainOptions{Method: signals.MethodPoll, Lease: time.Minute}))(t)
	if len(got) != 1 || got[0].DeliveryID == "" || got[0].DeliveredAt != nil || got[0].LeaseUntil == nil {
		t.Fatalf("lease drain %+v", got)
	}
	if again := need(q.Drain(ctx, "b", signals.DrainOptions{}))(t); len(again) != 0 {
		t.Fatalf("leased signal drained twice: %v", ids(again))
	}
	if d := need(q.Depth(ctx, "b"))(t); d.Leased != 1 || d.Pending != 0 {
		t.Fatalf("depth %+v, want 1 leased", d)
	}
	if stored := need(q.Get(ctx, s.ID))(t); stored.DeliveredAt != nil {
		t.Fatal("delivered_at written before confirmation")
	}
	if n := need(q.Ack(ctx, "someone-else", got[0].DeliveryID))(t); n != 0 {
		t.Fatalf("another identity confirmed %d", n)
	}
	if n := need(q.Ack(ctx, "b", got[0].DeliveryID))(t); n != 1 {
		t.Fatalf("ack confirmed %d, want 1", n)
	}
	if n := need(q.Ack(ctx, "b", got[0].DeliveryID))(t); n != 0 {
		t.Fatalf("second ack confirmed %d, want 0", n)
	}
	stored := need(q.Get(ctx, s.ID))(t)
	if stored.DeliveredAt == nil || stored.DeliveryMethod != signals.MethodPoll {
		t.Fatalf("confirmed signal %+v", stored)
	}
	if d := need(q.Depth(ctx, "b"))(t); d.Undelivered() != 0 {
		t.Fatalf("depth %+v after ack", d)
	}
}

func testRedelivery(t *testing.T, q *signals.Queue, opts Options) {
	ctx := ctxFor(t)
	s := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t"}))(t)
	first := need(q.Drain(ctx, "b", signals.DrainOptions{Lease: opts.Lease}))(t)
	if len(first) != 1 {
		t.Fatalf("first drain %v", ids(first))
	}
	var second []signals.Signal
	eventually(t, opts.Lease+10*time.Second, "redelivery after the lease", func() bool {
		second = need(q.Drain(ctx, "b", signals.DrainOptions{Lease: time.Minute}))(t)
		return len(second) > 0
	})
	if second[0].ID != s.ID || second[0].DeliveryID == first[0].DeliveryID || second[0].Attempts != 2 {
		t.Fatalf("redelivered %+v after %+v", second[0], first[0])
	}
	if n := need(q.Ack(ctx, "b", second[0].DeliveryID))(t); n != 1 {
		t.Fatalf("ack confirmed %d", n)
	}
}

func testSupersededAck(t *testing.T, q *signals.Queue, opts Options) {
	ctx := ctxFor(t)
	need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t"}))(t)
	first := need(q.Drain(ctx, "b", signals.DrainOptions{Lease: opts.Lease}))(t)
	var second []signals.Signal
	eventually(t, opts.Lease+10*time.Second, "redelivery", func() bool {
		second = need(q.Drain(ctx, "b", signals.DrainOptions{Lease: time.Minute}))(t)
		return len(second) > 0
	})
	if n := need(q.Ack(ctx, "b", first[0].DeliveryID))(t); n != 0 {
		t.Fatalf("superseded delivery confirmed %d", n)
	}
	if got := need(q.Get(ctx, first[0].ID))(t); got.DeliveredAt != nil {
		t.Fatal("superseded ack wrote delivered_at")
	}
	// A late ack of a lapsed but not re-claimed lease still confirms. The
	// lease is known to have lapsed by the store's own clock: a probe lease
	// of the same length, taken after it, has been redelivered.
	need(q.Send(ctx, signals.Message{From: "a", To: "c", Type: "t"}))(t)
	late := need(q.Drain(ctx, "c", signals.DrainOptions{Lease: opts.Lease}))(t)
	need(q.Send(ctx, signals.Message{From: "a", To: "c-probe", Type: "t"}))(t)
	if len(need(q.Drain(ctx, "c-probe", signals.DrainOptions{Lease: opts.Lease}))(t)) != 1 {
		t.Fatal("probe signal not drained")
	}
	eventually(t, opts.Lease+10*time.Second, "the probe lease to lapse", func() bool {
		return len(need(q.Drain(ctx, "c-probe", signals.DrainOptions{Lease: time.Minute}))(t)) > 0
	})
	if n := need(q.Ack(ctx, "c", late[0].DeliveryID))(t); n != 1 {
		t.Fatalf("late ack confirmed %d, want 1", n)
	}
	if got := need(q.Get(ctx, late[0].ID))(t); got.DeliveredAt == nil {
		t.Fatal("late ack did not write delivered_at")
	}
}

func testOrderLimit(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	var sent []string
	for i := range 7 {
		s := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: fmt.Sprint(i)}))(t)
		sent = append(sent, s.ID)
	}
	var got []string
	for range 4 {
		batch := need(q.Drain(ctx, "b", signals.DrainOptions{Mode: signals.MarkOnDrain, Limit: 3}))(t)
		if len(batch) > 3 {
			t.Fatalf("limit 3 drained %d", len(batch))
		}
		got = append(got, ids(batch)...)
	}
	if !slices.Equal(got, sent) {
		t.Fatalf("drain order %v, want %v", got, sent)
	}
}

func testDepth(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	for range 5 {
		need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t"}))(t)
	}
	if d := need(q.Depth(ctx, "b"))(t); d.Pending != 5 || d.Leased != 0 || d.Identity != "b" {
		t.Fatalf("depth %+v, want 5 pending", d)
	}
	got := need(q.Drain(ctx, "b", signals.DrainOptions{Limit: 2, Lease: time.Minute}))(t)
	if d := need(q.Depth(ctx, "b"))(t); d.Pending != 3 || d.Leased != 2 {
		t.Fatalf("depth %+v, want 3 pending 2 leased", d)
	}
	need(q.Ack(ctx, "b", got[0].DeliveryID))(t)
	need(q.Drain(ctx, "b", signals.DrainOptions{Limit: 1, Mode: signals.MarkOnDrain}))(t)
	if d := need(q.Depth(ctx, "b"))(t); d.Pending != 2 || d.Leased != 0 || d.Undelivered() != 2 {
		t.Fatalf("depth %+v, want 2 pending", d)
	}
	if d := need(q.Depth(ctx, "nobody"))(t); d.Undelivered() != 0 {
		t.Fatalf("empty identity depth %+v", d)
	}
}

func testIsolation(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	sb := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t"}))(t)
	sc := need(q.Send(ctx, signals.Message{From: "a", To: "c", Type: "t"}))(t)
	got := need(q.Drain(ctx, "b", signals.DrainOptions{Mode: signals.MarkOnDrain}))(t)
	if len(got) != 1 || got[0].ID != sb.ID {
		t.Fatalf("b drained %v", ids(got))
	}
	if stored := need(q.Get(ctx, sc.ID))(t); stored.DeliveredAt != nil {
		t.Fatal("draining b touched c's signal")
	}
}

func testNotFound(t *testing.T, q *signals.Queue, _ Options) {
	if _, err := q.Get(ctxFor(t), signals.NewID()); !errors.Is(err, signals.ErrNotFound) {
		t.Fatalf("err = %v, want not_found", err)
	}
}

func testDrainWithAck(t *testing.T, q *signals.Queue, _ Options) {
	ctx := ctxFor(t)
	a := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "1"}))(t)
	first := need(q.Drain(ctx, "b", signals.DrainOptions{Lease: time.Minute}))(t)
	c := need(q.Send(ctx, signals.Message{From: "a", To: "b", Type: "2"}))(t)
	second := need(q.Drain(ctx, "b", signals.DrainOptions{Lease: time.Minute, Ack: []string{first[0].DeliveryID}}))(t)
	if len(second) != 1 || second[0].ID != c.ID {
		t.Fatalf("second drain %v, want [%s]", ids(second), c.ID)
	}
	if got := need(q.Get(ctx, a.ID))(t); got.DeliveredAt == nil {
		t.Fatal("the drain did not confirm the earlier delivery")
	}
	if got := need(q.Get(ctx, c.ID))(t); got.DeliveredAt != nil {
		t.Fatal("the new delivery was confirmed too")
	}
	// With nothing new queued, the confirmation still happens.
	none := need(q.Drain(ctx, "b", signals.DrainOptions{Ack: []string{second[0].DeliveryID}}))(t)
	if len(none) != 0 || need(q.Get(ctx, c.ID))(t).DeliveredAt == nil {
		t.Fatalf("empty drain with ack: %v", ids(none))
	}
}

// sameSignal compares two signals field by field, times by instant.
func sameSignal(a, b signals.Signal) bool {
	sameTime := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	return a.ID == b.ID && a.From == b.From && a.To == b.To && a.Type == b.Type &&
		string(a.Payload) == string(b.Payload) && a.IdempotencyKey == b.IdempotencyKey &&
		a.CreatedAt.Equal(b.CreatedAt) && sameTime(a.DeliveredAt, b.DeliveredAt) &&
		a.DeliveryMethod == b.DeliveryMethod && a.DeliveryID == b.DeliveryID &&
		sameTime(a.LeaseUntil, b.LeaseUntil) && a.Attempts == b.Attempts
}
