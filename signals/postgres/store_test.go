package postgres_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/testsize"
	"github.com/prism-local/prism/signals/postgres"
	"github.com/prism-local/prism/signals/signalstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// databaseURL returns PRISM_TEST_POSTGRES_URL, skipping the test without it
// (failing in CI).
func databaseURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("PRISM_TEST_POSTGRES_URL")
	if url == "" {
		fixtures.Unavailable(t, "PostgreSQL: set PRISM_TEST_POSTGRES_URL (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return url
}

// freshSchema names a schema of its own for one test and drops it when the
// test ends.
func freshSchema(t testing.TB, url string) string {
	t.Helper()
	schema := "prism_test_" + signals.NewID()[:16]
	t.Cleanup(func() {
		if err := postgres.DropSchema(context.Background(), url, schema); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return schema
}

func openIn(t testing.TB, url, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	url := databaseURL(t)
	signalstest.Run(t, func(t *testing.T) signals.Store {
		return openIn(t, url, freshSchema(t, url))
	}, signalstest.Options{Signals: testsize.Pick(10000, 10000)})
}

func TestWaiterWokenByAnotherHandle(t *testing.T) {
	url := databaseURL(t)
	schema := freshSchema(t, url)
	signalstest.RunCrossHandleWake(t, openIn(t, url, schema), openIn(t, url, schema))
}

// callerPool opens a pgx pool the way a service would and closes it when
// the test ends, after every store built on it (cleanups run in reverse).
func callerPool(t testing.TB, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newIn(t testing.TB, pool *pgxpool.Pool, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestContractOnCallerPool runs the queue, router and lifecycle contract on
// stores that share one small caller-owned pool, each taking its LISTEN
// connection out of it.
func TestContractOnCallerPool(t *testing.T) {
	url := databaseURL(t)
	pool := callerPool(t, url, 4)
	open := func(t *testing.T) signals.Store { return newIn(t, pool, freshSchema(t, url)) }
	opts := signalstest.Options{Lease: 150 * time.Millisecond}
	t.Run("Queue", func(t *testing.T) { signalstest.RunQueue(t, open, opts) })
	t.Run("Router", func(t *testing.T) { signalstest.RunRouter(t, open, opts) })
	t.Run("Lifecycle", func(t *testing.T) { signalstest.RunLifecycle(t, open, opts) })
}

func TestWaiterWokenOnCallerPool(t *testing.T) {
	url := databaseURL(t)
	pool := callerPool(t, url, 2)
	schema := freshSchema(t, url)
	signalstest.RunCrossHandleWake(t, newIn(t, pool, schema), newIn(t, pool, schema))
}

// TestCallerPoolOutlivesStore: closing a store built with New leaves the
// caller's pool open and usable; only the LISTEN connection is gone.
func TestCallerPoolOutlivesStore(t *testing.T) {
	url := databaseURL(t)
	ctx := t.Context()
	pool := callerPool(t, url, 2)
	schema := freshSchema(t, url)
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signals.NewQueue(s).Send(ctx, signals.Message{From: "Ada", To: "Donna", Type: "note", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	listeners := func() int {
		t.Helper()
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query = $1`,
			"LISTEN "+pgx.Identifier{"prism_signals:" + schema}.Sanitize()).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := listeners(); n != 1 {
		t.Fatalf("%d LISTEN connections while the store is open; want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The server ends the backend shortly after the client hangs up.
	for deadline := time.Now().Add(10 * time.Second); listeners() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the LISTEN connection is still open after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("caller's pool after the store closed: %v", err)
	}
	var n int
	err = pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "signals"}.Sanitize()).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("signals through the caller's pool after Close: %d, %v; want 1", n, err)
	}
	// The store still works on the same pool when built again.
	d, err := newIn(t, pool, schema).Depth(ctx, "Donna")
	if err != nil || d.Pending != 1 {
		t.Fatalf("depth after reopening on the pool: %+v, %v; want 1 pending", d, err)
	}
}

func TestOptionErrors(t *testing.T) {
	url := databaseURL(t)
	ctx := t.Context()
	pool := callerPool(t, url, 2)
	cases := []struct {
		name string
		open func() (*postgres.Store, error)
	}{
		{"New without a pool", func() (*postgres.Store, error) { return postgres.New(ctx, nil) }},
		{"New with WithMaxConns", func() (*postgres.Store, error) { return postgres.New(ctx, pool, postgres.WithMaxConns(4)) }},
		{"Open with no connections", func() (*postgres.Store, error) { return postgres.Open(ctx, url, postgres.WithMaxConns(0)) }},
		{"Open with a bad url", func() (*postgres.Store, error) { return postgres.Open(ctx, "postgres://%zz") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.open()
			if err == nil {
				_ = s.Close()
				t.Fatal("no error")
			}
			var se *signals.Error
			if !errors.As(err, &se) || se.Code() != signals.CodeInvalidArgument {
				t.Fatalf("error %v; want code %s", err, signals.CodeInvalidArgument)
			}
		})
	}
}

// TestRelaxedCommitStaysInItsTransaction: lease-mode drains and acks turn
// synchronous_commit off for their own transaction only; the connection
// they ran on (the pool's only one) keeps the server's setting afterwards,
// so a send or anything else of the caller's on it commits as before.
func TestRelaxedCommitStaysInItsTransaction(t *testing.T) {
	url := databaseURL(t)
	ctx := t.Context()
	pool := callerPool(t, url, 1)
	setting := func() string {
		t.Helper()
		var v string
		if err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := setting()
	if before == "off" {
		t.Skip("the server runs with synchronous_commit off; nothing to tell apart")
	}
	q := signals.NewQueue(newIn(t, pool, freshSchema(t, url)))
	for range 3 {
		if _, err := q.Send(ctx, signals.Message{From: "Ada", To: "Donna", Type: "note"}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := q.Drain(ctx, "Donna", signals.DrainOptions{Limit: 1})
	if err != nil || len(first) != 1 {
		t.Fatalf("drain: %v, %v", first, err)
	}
	if got := setting(); got != before {
		t.Fatalf("synchronous_commit after a lease drain = %q; want %q", got, before)
	}
	second, err := q.Drain(ctx, "Donna", signals.DrainOptions{Limit: 1, Ack: []string{first[0].DeliveryID}})
	if err != nil || len(second) != 1 {
		t.Fatalf("drain with ack: %v, %v", second, err)
	}
	if got := setting(); got != before {
		t.Fatalf("synchronous_commit after a drain with ack = %q; want %q", got, before)
	}
	if n, err := q.Ack(ctx, "Donna", second[0].DeliveryID); err != nil || n != 1 {
		t.Fatalf("ack: %d, %v", n, err)
	}
	if got := setting(); got != before {
		t.Fatalf("synchronous_commit after an ack = %q; want %q", got, before)
	}
	if d, err := q.Depth(ctx, "Donna"); err != nil || d.Pending != 1 || d.Leased != 0 {
		t.Fatalf("depth %+v, %v; want 1 pending, 0 leased", d, err)
	}
}
