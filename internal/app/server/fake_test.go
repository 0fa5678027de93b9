package server_test

// A server over a fake model: the real handlers, Manager, templates (the
// real Qwen3 chat template) and SSE path, over enginetest's scripted
// backend instead of ONNX Runtime. Its backend's Hook lets a test act at an
// exact decode step, and it is cheap enough to fuzz.

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
)

// fakeModel is the fake's model id.
const fakeModel = "fake"

type fakeServer struct {
	handler *server.Server
	mgr     *engine.Manager
	key     string // the Manager's name of the model
	logs    *syncBuffer
}

// newFake returns a server whose model "fake" answers reply; hook, when
// set, becomes each loaded backend's Hook. The Manager is closed when t
// ends.
func newFake(t testing.TB, reply string, hook func(ctx context.Context, ids []int32, pos int) error, mopts ...engine.ManagerOption) *fakeServer {
	t.Helper()
	dir := fixtures.TokenizerDir(t, "qwen3") // its tokenizer and template; the engine's tokenizer is the byte one
	fs := &fakeServer{logs: &syncBuffer{}}
	logger := slog.New(slog.NewTextHandler(fs.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mgr, err := engine.NewManager(func(ctx context.Context, key string) (*engine.Engine, error) {
		b := enginetest.NewBackend(reply, 0)
		b.Hook = hook
		return engine.New(b, enginetest.ByteTokenizer{}, engine.WithLogger(logger))
	}, mopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	def := catalog.Model{ID: fakeModel, Dir: dir, Source: catalog.SourceDir}
	h, err := server.New(server.Config{Manager: mgr, Loopback: true, Logger: logger, Default: def})
	if err != nil {
		t.Fatal(err)
	}
	fs.handler, fs.mgr, fs.key = h, mgr, server.Key(catalog.Selection{Model: def})
	return fs
}

// listen serves fs on a loopback port until t ends.
func (fs *fakeServer) listen(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(fs.handler)
	t.Cleanup(srv.Close)
	return srv
}

// letters is n pseudo-random lowercase letters: a long answer with no
// cycle for the loop guard to stop.
func letters(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// settledFake waits until the fake's engine lock is free and no one waits.
func settledFake(t testing.TB, mgr *engine.Manager) {
	t.Helper()
	waitFor(t, func() bool { st := mgr.Stats(); return !st.InUse && st.Waiting == 0 })
}

var _ http.Handler = (*server.Server)(nil)

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met in 10 s")
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// syncBuffer is a log sink the server's goroutines may write to while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
