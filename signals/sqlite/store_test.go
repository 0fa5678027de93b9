package sqlite_test

import (
	"context"
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
	s, err := sqlite.Open(context.Background(), path, opts...)
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
	ctx := context.Background()
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
