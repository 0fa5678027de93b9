package memory_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/memory"
	"github.com/prism-local/prism/signals/signalstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestContract(t *testing.T) {
	signalstest.Run(t, func(t *testing.T) signals.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, signalstest.Options{})
}
