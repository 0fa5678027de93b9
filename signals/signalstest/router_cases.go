package signalstest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// RunRouter checks the verb router over the store in both delivery modes:
// the SPEC-041 §4 verification items 1–8 by name, plus the router's own
// rules (bootstrap, confirmation, buffer merge).
func RunRouter(t *testing.T, open Opener, opts Options) {
	opts.defaults()
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		t.Run(mode.String(), func(t *testing.T) {
			cases := []struct {
				name string
				run  func(t *testing.T, h *harness)
			}{
				{"SPEC041_1_StartHasNoPendingSignalsKey", spec041Item1},
				{"SPEC041_2_CheckpointHasNoPendingSignalsKey", spec041Item2},
				{"SPEC041_3_WrapHasNoPendingSignalsKey", spec041Item3},
				{"SPEC041_4_QueuedBeforeStartArrivesOnNextVerb", spec041Item4},
				{"SPEC041_5_PendingRightAfterStartReturnsSignal", spec041Item5},
				{"SPEC041_6_PiggybackOnNonLifecycleVerbs", spec041Item6},
				{"SPEC041_7_PickupDrains", spec041Item7},
				{"SPEC041_8_SignalsOutliveWrapAndReachNextSession", spec041Item8},
				{"HeartbeatNeverDrains", testHeartbeat},
				{"VerbsNeedABootstrappedSession", testBootstrap},
				{"BufferMergeDedupesByID", testBufferMerge},
				{"DeliveryIsConfirmedOnlyByAckOrNextCall", testConfirmation},
				{"FailedVerbDrainsNothing", testFailedVerb},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, newHarness(t, open(t), mode, opts))
				})
			}
		})
	}
}

type harness struct {
	t      *testing.T
	ctx    context.Context
	store  signals.Store
	router *signals.Router
	mode   signals.Mode
	buf    *sliceBuffer
}

func newHarness(t *testing.T, store signals.Store, mode signals.Mode, opts Options) *harness {
	t.Helper()
	buf := &sliceBuffer{}
	r, err := signals.NewRouter(signals.RouterConfig{Store: store, Mode: mode, Lease: time.Minute, Buffer: buf})
	if err != nil {
		t.Fatal(err)
	}
	status := func(ctx context.Context, c *signals.Call) (any, error) {
		return map[string]string{"status": "ok", "identity": c.Identity}, nil
	}
	if err := r.Handle("status", status); err != nil {
		t.Fatal(err)
	}
	if err := r.Handle(signals.VerbCheckpoint, func(ctx context.Context, c *signals.Call) (any, error) {
		return map[string]bool{"saved": true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.Handle("fail", func(ctx context.Context, c *signals.Call) (any, error) {
		return nil, errors.New("verb failed")
	}); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ctx: ctxFor(t), store: store, router: r, mode: mode, buf: buf}
}

func (h *harness) call(verb, identity, session string) *signals.Response {
	h.t.Helper()
	resp, err := h.router.Call(h.ctx, signals.Request{Verb: verb, Identity: identity, Session: session})
	if err != nil {
		h.t.Fatalf("%s: %v", verb, err)
	}
	return resp
}

func (h *harness) start(identity string) string {
	h.t.Helper()
	resp := h.call(signals.VerbStart, identity, "")
	h.noKey(resp)
	if resp.Session == "" {
		h.t.Fatal("start returned no session")
	}
	return resp.Session
}

func (h *harness) send(from, to string) signals.Signal {
	h.t.Helper()
	return need(signals.NewQueue(h.store).Send(h.ctx, signals.Message{From: from, To: to, Type: "note", Payload: json.RawMessage(`{"n":1}`)}))(h.t)
}

func (h *harness) noKey(resp *signals.Response) {
	h.t.Helper()
	if _, ok := jsonKeys(h.t, resp)["pending_signals"]; ok || resp.Piggyback {
		h.t.Fatalf("%s response has a pending_signals key", resp.Verb)
	}
}

func (h *harness) pending(resp *signals.Response) []signals.Signal {
	h.t.Helper()
	raw, ok := jsonKeys(h.t, resp)["pending_signals"]
	if !ok || !resp.Piggyback {
		h.t.Fatalf("%s response has no pending_signals key", resp.Verb)
	}
	var sigs []signals.Signal
	if err := json.Unmarshal(raw, &sigs); err != nil || sigs == nil {
		h.t.Fatalf("pending_signals = %s (%v), want an array", raw, err)
	}
	if resp.PendingError != "" {
		h.t.Fatalf("drain failed: %s", resp.PendingError)
	}
	return sigs
}

// delivered checks the stored record of id after the delivery settled: in
// lease mode the caller has made the confirming call already.
func (h *harness) delivered(id string, method signals.Method) {
	h.t.Helper()
	s := need(h.store.Signal(h.ctx, id))(h.t)
	if s.DeliveredAt == nil || s.DeliveryMethod != method {
		h.t.Fatalf("signal %s: delivered_at=%v method=%q, want delivered by %s", id, s.DeliveredAt, s.DeliveryMethod, method)
	}
}

func (h *harness) undelivered(id string) {
	h.t.Helper()
	if s := need(h.store.Signal(h.ctx, id))(h.t); s.DeliveredAt != nil {
		h.t.Fatalf("signal %s marked delivered (%s) without a delivery", id, s.DeliveryMethod)
	}
}

func wantIDs(t *testing.T, got []signals.Signal, want ...string) {
	t.Helper()
	if g := ids(got); !slices.Equal(g, want) {
		t.Fatalf("signals %v, want %v", g, want)
	}
}

func spec041Item1(t *testing.T, h *harness) {
	h.send("Frank", "Donna")
	sess := h.start("Donna") // asserts: no pending_signals key
	_ = sess
}

func spec041Item2(t *testing.T, h *harness) {
	sess := h.start("Donna")
	s := h.send("Frank", "Donna")
	resp := h.call(signals.VerbCheckpoint, "Donna", sess)
	h.noKey(resp)
	h.undelivered(s.ID)
}

func spec041Item3(t *testing.T, h *harness) {
	sess := h.start("Donna")
	s := h.send("Frank", "Donna")
	resp := h.call(signals.VerbWrap, "Donna", sess)
	h.noKey(resp)
	h.undelivered(s.ID)
}

func spec041Item4(t *testing.T, h *harness) {
	s := h.send("Frank", "Donna")
	sess := h.start("Donna")
	h.undelivered(s.ID)
	got := h.pending(h.call("status", "Donna", sess))
	wantIDs(t, got, s.ID)
	if got[0].DeliveryMethod != signals.MethodPiggyback {
		t.Fatalf("method %q", got[0].DeliveryMethod)
	}
	h.call(signals.VerbHeartbeat, "Donna", sess) // confirms in lease mode
	h.delivered(s.ID, signals.MethodPiggyback)
}

func spec041Item5(t *testing.T, h *harness) {
	s := h.send("Frank", "Donna")
	sess := h.start("Donna")
	got := h.pending(h.call(signals.VerbPending, "Donna", sess))
	wantIDs(t, got, s.ID)
	h.call(signals.VerbHeartbeat, "Donna", sess)
	h.delivered(s.ID, signals.MethodPoll)
}

func spec041Item6(t *testing.T, h *harness) {
	sess := h.start("Donna")
	// Every non-lifecycle bootstrapped verb piggybacks, with an empty array
	// when nothing is pending.
	if got := h.pending(h.call("status", "Donna", sess)); len(got) != 0 {
		t.Fatalf("nothing sent, got %v", ids(got))
	}
	s1 := h.send("Frank", "Donna")
	resp, err := h.router.Call(h.ctx, signals.Request{Verb: signals.VerbSend, Identity: "Donna", Session: sess,
		Args: json.RawMessage(`{"to":"Frank","type":"reply","payload":{"ok":true}}`)})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, h.pending(resp), s1.ID)
	sent, ok := resp.Result.(signals.Signal)
	if !ok || sent.From != "Donna" || sent.To != "Frank" || sent.DeliveredAt != nil {
		t.Fatalf("send result %#v", resp.Result)
	}
	s2 := h.send("Frank", "Donna")
	resp, err = h.router.Call(h.ctx, signals.Request{Verb: signals.VerbAck, Identity: "Donna", Session: sess,
		Args: json.RawMessage(`{"delivery_ids":[]}`)})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, h.pending(resp), s2.ID)
	h.call("status", "Donna", sess)
	h.delivered(s1.ID, signals.MethodPiggyback)
	h.delivered(s2.ID, signals.MethodPiggyback)
	// Nothing is delivered twice.
	if got := h.pending(h.call("status", "Donna", sess)); len(got) != 0 {
		t.Fatalf("redelivered %v", ids(got))
	}
}

func spec041Item7(t *testing.T, h *harness) {
	s := h.send("Frank", "Donna")
	resp := h.call(signals.VerbPickup, "Donna", "")
	if resp.Session == "" {
		t.Fatal("pickup returned no session")
	}
	wantIDs(t, h.pending(resp), s.ID)
	h.call(signals.VerbHeartbeat, "Donna", resp.Session)
	h.delivered(s.ID, signals.MethodStartupDrain)
	// A pickup of a live session continues it.
	again := h.call(signals.VerbPickup, "Donna", resp.Session)
	if again.Session != resp.Session {
		t.Fatalf("pickup of live session %s gave %s", resp.Session, again.Session)
	}
}

func spec041Item8(t *testing.T, h *harness) {
	sess := h.start("Donna")
	s := h.send("Frank", "Donna")
	h.noKey(h.call(signals.VerbWrap, "Donna", sess))
	if d := need(h.store.Depth(h.ctx, "Donna"))(t); d.Pending != 1 {
		t.Fatalf("depth after wrap %+v, want the signal still queued", d)
	}
	if _, err := h.router.Call(h.ctx, signals.Request{Verb: "status", Identity: "Donna", Session: sess}); !errors.Is(err, signals.ErrSessionEnded) {
		t.Fatalf("verb on wrapped session: err = %v, want session_ended", err)
	}
	next := h.start("Donna")
	h.undelivered(s.ID)
	wantIDs(t, h.pending(h.call("status", "Donna", next)), s.ID)
	h.call(signals.VerbHeartbeat, "Donna", next)
	h.delivered(s.ID, signals.MethodPiggyback)
}

func testHeartbeat(t *testing.T, h *harness) {
	sess := h.start("Donna")
	s := h.send("Frank", "Donna")
	h.noKey(h.call(signals.VerbHeartbeat, "Donna", sess))
	h.undelivered(s.ID)
	if d := need(h.store.Depth(h.ctx, "Donna"))(t); d.Pending != 1 {
		t.Fatalf("heartbeat drained: %+v", d)
	}
}

func testBootstrap(t *testing.T, h *harness) {
	s := h.send("Frank", "Donna")
	for _, verb := range []string{"status", signals.VerbPending, signals.VerbCheckpoint, signals.VerbWrap, signals.VerbHeartbeat} {
		if _, err := h.router.Call(h.ctx, signals.Request{Verb: verb, Identity: "Donna"}); !errors.Is(err, signals.ErrNotBootstrapped) {
			t.Fatalf("%s without session: err = %v, want not_bootstrapped", verb, err)
		}
	}
	sess := h.start("Donna")
	if _, err := h.router.Call(h.ctx, signals.Request{Verb: "status", Identity: "Mallory", Session: sess}); !errors.Is(err, signals.ErrIdentityMismatch) {
		t.Fatalf("foreign session: err = %v, want identity_mismatch", err)
	}
	if _, err := h.router.Call(h.ctx, signals.Request{Verb: "nope", Identity: "Donna", Session: sess}); !errors.Is(err, signals.ErrUnknownVerb) {
		t.Fatalf("unknown verb: err = %v", err)
	}
	h.undelivered(s.ID)
}

func testBufferMerge(t *testing.T, h *harness) {
	sess := h.start("Donna")
	s := h.send("Frank", "Donna")
	dup := s
	dup.DeliveryMethod = signals.MethodSubscriberBuffer
	extra := signals.Signal{ID: signals.NewID(), From: "Frank", To: "Donna", Type: "pushed", DeliveryMethod: signals.MethodSubscriberBuffer}
	h.buf.put("Donna", dup, extra, extra)
	got := h.pending(h.call("status", "Donna", sess))
	wantIDs(t, got, s.ID, extra.ID)
	if got[0].DeliveryMethod != signals.MethodPiggyback {
		t.Fatalf("backend copy should win the merge, got %q", got[0].DeliveryMethod)
	}
}

func testConfirmation(t *testing.T, h *harness) {
	sess := h.start("Donna")
	s := h.send("Frank", "Donna")
	got := h.pending(h.call("status", "Donna", sess))
	wantIDs(t, got, s.ID)
	if h.mode == signals.MarkOnDrain {
		h.delivered(s.ID, signals.MethodPiggyback)
		return
	}
	h.undelivered(s.ID) // lease mode: handed out, not yet confirmed
	// An explicit ack in the request confirms.
	resp, err := h.router.Call(h.ctx, signals.Request{Verb: signals.VerbHeartbeat, Identity: "Donna", Session: sess, Ack: []string{got[0].DeliveryID}})
	if err != nil {
		t.Fatal(err)
	}
	h.noKey(resp)
	h.delivered(s.ID, signals.MethodPiggyback)
	// Another router (another process) does not confirm on this one's behalf.
	s2 := h.send("Frank", "Donna")
	got = h.pending(h.call("status", "Donna", sess))
	wantIDs(t, got, s2.ID)
	other, err := signals.NewRouter(signals.RouterConfig{Store: h.store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Call(h.ctx, signals.Request{Verb: signals.VerbHeartbeat, Identity: "Donna", Session: sess}); err != nil {
		t.Fatal(err)
	}
	h.undelivered(s2.ID)
	h.call(signals.VerbHeartbeat, "Donna", sess)
	h.delivered(s2.ID, signals.MethodPiggyback)
}

func testFailedVerb(t *testing.T, h *harness) {
	sess := h.start("Donna")
	s := h.send("Frank", "Donna")
	if _, err := h.router.Call(h.ctx, signals.Request{Verb: "fail", Identity: "Donna", Session: sess}); err == nil {
		t.Fatal("failing verb returned no error")
	}
	if d := need(h.store.Depth(h.ctx, "Donna"))(t); d.Pending != 1 {
		t.Fatalf("failed verb drained: %+v", d)
	}
	h.undelivered(s.ID)
}

type sliceBuffer struct {
	mu  sync.Mutex
	buf map[string][]signals.Signal
}

func (b *sliceBuffer) put(identity string, sigs ...signals.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		b.buf = map[string][]signals.Signal{}
	}
	b.buf[identity] = append(b.buf[identity], sigs...)
}

func (b *sliceBuffer) Take(identity string) []signals.Signal {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.buf[identity]
	delete(b.buf, identity)
	return out
}
