package proctest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// RunExchange starts a sender process that sends n signals to identity
// "receiver" through the send verb while this process, as "receiver",
// calls a verb in a loop and collects the piggybacked signals. Every signal
// must arrive exactly once: none lost, none repeated (even before
// de-duplication), and the store must show none undelivered at the end.
func RunExchange(t *testing.T, store signals.Store, target string, n int, mode signals.Mode) {
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	r, err := signals.NewRouter(signals.RouterConfig{Store: store, Mode: mode, Lease: 10 * time.Minute, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Handle("status", func(context.Context, *signals.Call) (any, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	start, err := r.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: "receiver"})
	if err != nil {
		t.Fatal(err)
	}
	sender := Start(t, RoleSender, target, fmt.Sprintf("%s=%d", envCount, n), envMode+"="+mode.String())
	sentCh := make(chan []string, 1)
	go func() {
		var sent []string
		for l := range sender.lines {
			if id, ok := strings.CutPrefix(l, "sent "); ok {
				sent = append(sent, id)
			}
		}
		sentCh <- sent
	}()
	seen := make(map[string]int, n)
	raw := 0
	calls := 0
	for len(seen) < n {
		if ctx.Err() != nil {
			t.Fatalf("after %d verb calls only %d of %d signals arrived", calls, len(seen), n)
		}
		resp, err := r.Call(ctx, signals.Request{Verb: "status", Identity: "receiver", Session: start.Session})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if resp.PendingError != "" {
			t.Fatal(resp.PendingError)
		}
		for _, s := range resp.PendingSignals {
			seen[s.ID]++
			raw++
		}
		if len(resp.PendingSignals) == 0 {
			wake, stop := store.Watch(signals.InboxKey("receiver"))
			select {
			case <-wake:
			case <-time.After(10 * time.Millisecond):
			}
			stop()
		}
	}
	// The next call confirms the last delivery (lease mode).
	if _, err := r.Call(ctx, signals.Request{Verb: signals.VerbHeartbeat, Identity: "receiver", Session: start.Session}); err != nil {
		t.Fatal(err)
	}
	err = <-sender.done
	sender.done <- err
	if err != nil {
		t.Fatalf("sender process: %v", err)
	}
	sent := <-sentCh
	if len(sent) != n {
		t.Fatalf("sender reported %d signals, want %d", len(sent), n)
	}
	lost := 0
	for _, id := range sent {
		if seen[id] == 0 {
			lost++
		}
	}
	dups := raw - len(seen)
	t.Logf("%s: %d signals from another process in %d verb calls; lost %d, duplicated %d", mode, n, calls, lost, dups)
	if lost != 0 || dups != 0 || len(seen) != n {
		t.Fatalf("lost %d, duplicated %d, distinct %d of %d", lost, dups, len(seen), n)
	}
	d, err := signals.NewQueue(store).Depth(ctx, "receiver")
	if err != nil || d.Undelivered() != 0 {
		t.Fatalf("depth %+v (%v), want every signal delivered", d, err)
	}
}

// RunCrash queues signals for "victim", starts a receiver process that
// drains them into a verb response and is killed with SIGKILL before that
// response is written, then shows what each mode does: LeaseAndAck hands the
// same signal ids out again once the lease has run out; MarkOnDrain has
// recorded them delivered and they are lost (the documented SPEC-037 loss).
func RunCrash(t *testing.T, store signals.Store, target string, mode signals.Mode) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const lease = 400 * time.Millisecond
	q := signals.NewQueue(store)
	var sent []string
	for i := range 3 {
		s, err := q.Send(ctx, signals.Message{From: "frank", To: "victim", Type: "n", Payload: json.RawMessage(fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, s.ID)
	}
	victim := Start(t, RoleCrashReceiver, target, envMode+"="+mode.String(), envLease+"="+lease.String())
	if l, _ := victim.Line(t, 2*time.Minute); l != "ready" {
		t.Fatalf("helper said %q", l)
	}
	l, _ := victim.Line(t, 2*time.Minute)
	ids, ok := strings.CutPrefix(l, "drained ")
	if !ok || !slices.Equal(strings.Split(ids, ","), sent) {
		t.Fatalf("helper drained %q, want %v", l, sent)
	}
	victim.Kill9(t) // after the drain, before any response was written

	before := make([]signals.Signal, len(sent))
	for i, id := range sent {
		s, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		before[i] = s
	}

	// The agent restarts: a new process, a new session.
	r, err := signals.NewRouter(signals.RouterConfig{Store: store, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Handle("status", func(context.Context, *signals.Call) (any, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	start, err := r.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	status := func() []signals.Signal {
		resp, err := r.Call(ctx, signals.Request{Verb: "status", Identity: "victim", Session: start.Session})
		if err != nil {
			t.Fatal(err)
		}
		return resp.PendingSignals
	}

	if mode == signals.MarkOnDrain {
		for _, s := range before {
			if s.DeliveredAt == nil || s.DeliveryMethod != signals.MethodPiggyback {
				t.Fatalf("mark-on-drain: %+v should be recorded delivered by the dead drain", s)
			}
		}
		if got := status(); len(got) != 0 {
			t.Fatalf("mark-on-drain redelivered %v", got)
		}
		if d, err := q.Depth(ctx, "victim"); err != nil || d.Undelivered() != 0 {
			t.Fatalf("depth %+v (%v)", d, err)
		}
		t.Logf("mark-on-drain: %d signals recorded delivered at %v but never seen by the agent: the documented loss", len(sent), before[0].DeliveredAt)
		return
	}

	for _, s := range before {
		if s.DeliveredAt != nil || s.Attempts != 1 || s.LeaseUntil == nil {
			t.Fatalf("lease mode: %+v should be leased and unconfirmed after the crash", s)
		}
	}
	var again []signals.Signal
	deadline := time.Now().Add(time.Minute)
	for len(again) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no redelivery within a minute of the lease")
		}
		again = status()
		if len(again) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	redelivered := time.Now()
	var got []string
	for _, s := range again {
		got = append(got, s.ID)
		if s.Attempts != 2 || s.DeliveryID == before[0].DeliveryID {
			t.Fatalf("redelivered %+v, want a second attempt under a new delivery id", s)
		}
	}
	if !slices.Equal(got, sent) {
		t.Fatalf("redelivered %v, want the same ids %v", got, sent)
	}
	if redelivered.Before(*before[0].LeaseUntil) {
		t.Fatalf("redelivered at %v, before the lease ran out at %v", redelivered, before[0].LeaseUntil)
	}
	if _, err := r.Call(ctx, signals.Request{Verb: signals.VerbHeartbeat, Identity: "victim", Session: start.Session}); err != nil {
		t.Fatal(err)
	}
	for _, id := range sent {
		if s, err := q.Get(ctx, id); err != nil || s.DeliveredAt == nil {
			t.Fatalf("after confirmation %+v (%v)", s, err)
		}
	}
	t.Logf("lease mode: %d signals redelivered with the same ids %v after the lease ran out", len(sent), redelivered.Sub(*before[0].LeaseUntil))
}
