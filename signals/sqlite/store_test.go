package sqlite_test

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/testsize"
	"github.com/prism-local/prism/signals/signalstest"
	"github.com/prism-local/prism/signals/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openAt(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	signalstest.Run(t, func(t *testing.T) signals.Store {
		return openAt(t, filepath.Join(t.TempDir(), "signals.db"))
	}, signalstest.Options{Signals: testsize.Pick(10000, 1000)})
}

func TestWaiterWokenByAnotherHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	signalstest.RunCrossHandleWake(t, openAt(t, path), openAt(t, path))
}

func TestReopenKeepsState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "durable.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signals.NewQueue(s).Send(ctx, signals.Message{From: "a", To: "b", Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signals.NewTree(s).Begin(ctx, "q1", "s1", "main"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openAt(t, path)
	if got, err := signals.NewQueue(again).Get(ctx, sig.ID); err != nil || got.DeliveredAt != nil {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	if snap, err := signals.NewTree(again).Snapshot(ctx, "q1"); err != nil || snap.Root.State != signals.Running {
		t.Fatalf("after reopen: %+v, %v", snap, err)
	}
}

// TestBatchKeepsBytes checks that a batch is stored byte for byte and in
// order, both when it travels as JSON and when a text that JSON would alter
// (invalid UTF-8, NUL) sends it row by row, with a repeated key inside it.
func TestBatchKeepsBytes(t *testing.T) {
	cases := []struct {
		name, from, payload string
	}{
		{"json", "sender \u00e9 <&>", `{"s":"\u00e9 \"q\" <&>","n":[1,2.50]}`},
		{"invalid utf-8", "sender \xff", `"a"`},
		{"nul", "sender \x00 x", `"a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			q := signals.NewQueue(openAt(t, filepath.Join(t.TempDir(), "bytes.db")))
			msgs := []signals.Message{
				{From: c.from, To: "r", Type: "t", Payload: []byte(c.payload), IdempotencyKey: "k"},
				{From: c.from, To: "r", Type: "t", Payload: []byte(`1`)},
				{From: c.from, To: "r", Type: "t", Payload: []byte(`2`), IdempotencyKey: "k"},
			}
			sent, err := q.SendBatch(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			if sent[2].ID != sent[0].ID || sent[1].ID == sent[0].ID {
				t.Fatalf("idempotency inside a batch: %q %q %q", sent[0].ID, sent[1].ID, sent[2].ID)
			}
			got, err := q.Drain(ctx, "r", signals.DrainOptions{Mode: signals.MarkOnDrain})
			if err != nil || len(got) != 2 {
				t.Fatalf("drain: %d signals, %v", len(got), err)
			}
			if got[0].From != c.from || string(got[0].Payload) != c.payload || string(got[1].Payload) != "1" {
				t.Fatalf("stored %q %q, %q; want %q %q, \"1\"", got[0].From, got[0].Payload, got[1].Payload, c.from, c.payload)
			}
		})
	}
}
