package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/proctest"
	"github.com/prism-local/prism/signals/internal/testsize"
	"github.com/prism-local/prism/signals/postgres"
)

// TestHelperProcess is the second process of the tests below; it does
// nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	if !proctest.IsHelper() {
		t.Skip("helper process for the multi-process tests")
	}
	proctest.HelperMain(func(ctx context.Context, schema string) (signals.Store, error) {
		return postgres.Open(ctx, os.Getenv("PRISM_TEST_POSTGRES_URL"), postgres.WithSchema(schema))
	})
}

func TestTwoProcessesShareOneDatabase(t *testing.T) {
	url := databaseURL(t)
	n := testsize.Pick(10000, 2000)
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		t.Run(mode.String(), func(t *testing.T) {
			schema := freshSchema(t, url)
			proctest.RunExchange(t, openIn(t, url, schema), schema, n, mode)
		})
	}
}

func TestCrashAfterDrainBeforeResponse(t *testing.T) {
	url := databaseURL(t)
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		t.Run(mode.String(), func(t *testing.T) {
			schema := freshSchema(t, url)
			proctest.RunCrash(t, openIn(t, url, schema), schema, mode)
		})
	}
}
