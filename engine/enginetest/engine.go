package enginetest

import (
	"testing"

	"github.com/prism-local/prism/engine"
)

// NewEngine returns a real *engine.Engine over a scripted Backend that
// answers every prompt with reply followed by EOS, using the byte
// tokenizer (one token per byte) and a 4096-token context window. The
// environment is ignored unless an option says otherwise; the engine is
// closed when the test ends.
func NewEngine(t testing.TB, reply string, opts ...engine.Option) *engine.Engine {
	t.Helper()
	e, _ := NewEngineBackend(t, NewBackend(reply, 0), opts...)
	return e
}

// NewEngineBackend builds an engine over b with the byte tokenizer and
// returns both, so a test can inspect b.Stats. The engine is closed when the
// test ends.
func NewEngineBackend(t testing.TB, b *Backend, opts ...engine.Option) (*engine.Engine, *Backend) {
	t.Helper()
	e, err := engine.New(b, ByteTokenizer{}, opts...)
	if err != nil {
		t.Fatalf("enginetest: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e, b
}

// New returns a real *engine.Engine over a scripted Backend replying with
// reply, like NewEngine, for code without a testing.TB (examples, benchmarks
// harnesses, downstream fakes). The caller closes it.
func New(reply string, opts ...engine.Option) (*engine.Engine, error) {
	return engine.New(NewBackend(reply, 0), ByteTokenizer{}, opts...)
}
