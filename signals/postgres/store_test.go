package postgres_test

import (
	"context"
	"os"
	"testing"

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
	s, err := postgres.Open(context.Background(), url, postgres.WithSchema(schema))
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
