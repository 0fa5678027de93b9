package signals_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/memory"
)

// A router wraps the agent's verbs; signals ride on the responses of
// non-lifecycle verbs.
func ExampleRouter() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	r, _ := signals.NewRouter(signals.RouterConfig{Store: store})
	_ = r.Handle("status", func(ctx context.Context, c *signals.Call) (any, error) {
		return "ok", nil
	})

	_, _ = r.Queue().Send(ctx, signals.Message{From: "Frank", To: "Donna", Type: "note", Payload: json.RawMessage(`"hi"`)})

	start, _ := r.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: "Donna"})
	b, _ := json.Marshal(start)
	fmt.Println(string(b) != "" && !start.Piggyback) // lifecycle verb: no pending_signals key

	status, _ := r.Call(ctx, signals.Request{Verb: "status", Identity: "Donna", Session: start.Session})
	for _, s := range status.PendingSignals {
		fmt.Println(s.Type, string(s.Payload), s.DeliveryMethod)
	}
	// Output:
	// true
	// note "hi" piggyback
}

// The queue directly: lease-and-ack drains are confirmed by an ack.
func ExampleQueue_Drain() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	q := signals.NewQueue(store)
	s, _ := q.Send(ctx, signals.Message{From: "a", To: "b", Type: "ping"})
	got, _ := q.Drain(ctx, "b", signals.DrainOptions{})
	fmt.Println(got[0].ID == s.ID, got[0].DeliveredAt == nil)
	n, _ := q.Ack(ctx, "b", got[0].DeliveryID)
	fmt.Println(n)
	// Output:
	// true true
	// 1
}

// Wait returns when the exact tree of a sent message is complete.
func ExampleTree_Wait() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	tree := signals.NewTree(store)
	_, _ = tree.Begin(ctx, "query-1", "session-1", "main")
	_, _ = tree.Child(ctx, "agent-1", "query-1", "worker")
	_, _ = tree.Record(ctx, "agent-1", "worker", signals.Outcome{State: signals.Succeeded})
	_, _ = tree.Notified(ctx, "agent-1")
	_, _ = tree.Record(ctx, "query-1", "main", signals.Outcome{State: signals.Succeeded})
	snap, err := tree.Wait(ctx, "query-1")
	fmt.Println(snap.Status, len(snap.Nodes), err)
	// Output:
	// succeeded 2 <nil>
}
