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
