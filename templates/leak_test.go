package templates

import (
	"testing"

	"go.uber.org/goleak"
)

// verifyNoLeaks runs the tests and fails if any goroutine outlives them:
// rendering must never leave one behind (the engine's own range() would).
func verifyNoLeaks(m *testing.M) { goleak.VerifyTestMain(m) }
