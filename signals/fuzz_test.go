package signals_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/memory"
)

// FuzzRouterArgs feeds arbitrary verb arguments to the router's built-in
// verbs: it must never panic, and every failure is a typed error.
func FuzzRouterArgs(f *testing.F) {
	for _, seed := range []string{
		`{"to":"b","type":"t","payload":{"x":1}}`,
		`{"to":"b","type":"t","payload":"s","idempotency_key":"k"}`,
		`{"delivery_ids":["a","b"]}`,
		`{"delivery_ids":null}`,
		`{"to":"","type":""}`,
		`[]`, `null`, `{`, `{"payload":}`, "",
	} {
		f.Add(signals.VerbSend, seed)
		f.Add(signals.VerbAck, seed)
	}
	f.Fuzz(func(t *testing.T, verb, args string) {
		ctx := t.Context()
		store := memory.New()
		defer store.Close()
		r, err := signals.NewRouter(signals.RouterConfig{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		start, err := r.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: "a"})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := r.Call(ctx, signals.Request{Verb: verb, Identity: "a", Session: start.Session, Args: json.RawMessage(args)})
		if err != nil {
			var e *signals.Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("response does not marshal: %v", err)
		}
	})
}
