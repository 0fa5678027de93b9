package signals_test

import (
	"encoding/json"
	"errors"
	"github.com/prism-local/prism/errcode"
	"testing"

	"go.uber.org/goleak"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/memory"
	"github.com/prism-local/prism/signals/signalstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The contract suite over the memory store also exercises the router and
// the tree of this package.
func TestRouterAndTreeOverMemory(t *testing.T) {
	signalstest.Run(t, func(t *testing.T) signals.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, signalstest.Options{Signals: 1000})
}

func TestResponseJSON(t *testing.T) {
	cases := []struct {
		name string
		resp signals.Response
		want string
	}{
		{"lifecycle", signals.Response{Verb: "start", Session: "s", Result: nil}, `{"result":null,"session":"s","verb":"start"}`},
		{"empty piggyback", signals.Response{Verb: "status", Piggyback: true}, `{"pending_signals":[],"result":null,"verb":"status"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.resp)
			if err != nil || string(b) != c.want {
				t.Fatalf("got %s (%v), want %s", b, err, c.want)
			}
		})
	}
}

func TestVerbClasses(t *testing.T) {
	cases := []struct {
		verb                 string
		lifecycle, piggyback bool
	}{
		{signals.VerbStart, true, false},
		{signals.VerbCheckpoint, true, false},
		{signals.VerbWrap, true, false},
		{signals.VerbHeartbeat, false, false},
		{signals.VerbPending, false, true},
		{signals.VerbPickup, false, true},
		{signals.VerbSend, false, true},
		{"status", false, true},
	}
	for _, c := range cases {
		if signals.IsLifecycleVerb(c.verb) != c.lifecycle || signals.Piggybacks(c.verb) != c.piggyback {
			t.Errorf("%s: lifecycle=%v piggyback=%v", c.verb, signals.IsLifecycleVerb(c.verb), signals.Piggybacks(c.verb))
		}
	}
}

func TestErrorsMatchByCode(t *testing.T) {
	cause := errors.New("disk full")
	err := signals.StoreError("drain", cause)
	if !errors.Is(err, signals.ErrStore) || !errors.Is(err, cause) || errors.Is(err, signals.ErrNotFound) {
		t.Fatalf("%v", err)
	}
	if errcode.Of(err) != signals.CodeStore || signals.StoreError("x", nil) != nil {
		t.Fatal("errcode.Of / nil")
	}
	nf := signals.Errorf(signals.CodeNotFound, "get", "no signal %q", "x")
	if signals.StoreError("get", nf) != error(nf) || nf.Error() != `signals get: no signal "x"` {
		t.Fatalf("%v", nf)
	}
}

func TestProjectOrdersAndFlagsOpenNodes(t *testing.T) {
	nodes := []signals.Node{
		{ID: "r", Root: "r", State: signals.Succeeded},
		{ID: "c", Parent: "r", Root: "r", Notify: true, State: signals.Succeeded},
		{ID: "orphan", Parent: "x", Root: "x", State: signals.Running},
	}
	snaps := signals.Project(nodes)
	if len(snaps) != 1 || snaps[0].Complete || snaps[0].Status != "completing" || len(snaps[0].Open) != 1 {
		t.Fatalf("%+v", snaps)
	}
}

func TestRouterRejectsBadConfig(t *testing.T) {
	if _, err := signals.NewRouter(signals.RouterConfig{}); !errors.Is(err, signals.ErrInvalidArgument) {
		t.Fatal(err)
	}
	r, _ := signals.NewRouter(signals.RouterConfig{Store: memory.New()})
	if err := r.Handle(signals.VerbSend, nil); !errors.Is(err, signals.ErrInvalidArgument) {
		t.Fatal(err)
	}
}
