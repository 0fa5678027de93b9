package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/proctest"
	"github.com/prism-local/prism/signals/internal/testsize"
	"github.com/prism-local/prism/signals/sqlite"
)

// TestHelperProcess is the second process of the tests below; it does
// nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	if !proctest.IsHelper() {
		t.Skip("helper process for the multi-process tests")
	}
	proctest.HelperMain(func(ctx context.Context, path string) (signals.Store, error) {
		return sqlite.Open(ctx, path)
	})
}

func TestTwoProcessesShareOneFile(t *testing.T) {
	n := testsize.Pick(10000, 1000)
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		t.Run(mode.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shared.db")
			proctest.RunExchange(t, openAt(t, path), path, n, mode)
		})
	}
}

func TestCrashAfterDrainBeforeResponse(t *testing.T) {
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		t.Run(mode.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shared.db")
			proctest.RunCrash(t, openAt(t, path), path, mode)
		})
	}
}
