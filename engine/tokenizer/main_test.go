package tokenizer

import (
	"testing"

	"go.uber.org/goleak"
)

// Load resolves merges on helper goroutines; none may outlive it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
