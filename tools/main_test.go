package tools_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The parser starts no goroutines; the engine used by TestEngineStream may,
// and must have stopped them all when the test ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
