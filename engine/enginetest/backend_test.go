package enginetest_test

import (
	"testing"

	"github.com/prism-local/prism/engine/enginetest"
)

// The fake refuses the cache sizes a real backend cannot hold, so an engine
// bug that asks for one fails in tests instead of passing silently.
func TestBackendReserveBounds(t *testing.T) {
	for _, tt := range []struct {
		n  int
		ok bool
	}{{-5, false}, {0, false}, {1, true}, {64, true}, {65, false}} {
		b := enginetest.NewBackend("x", 64)
		if err := b.Reserve(tt.n); (err == nil) != tt.ok {
			t.Errorf("Reserve(%d) = %v, want ok %v", tt.n, err, tt.ok)
		}
	}
}
