package backend

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/prism-local/prism/internal/app/server"
)

// HandlerOf returns the reference server's handler over b's in-process
// Manager and catalog (built if need be): the same models, answered over
// HTTP, for a test's "server" side.
func HandlerOf(t *testing.T, b *Backend) http.Handler {
	l, err := b.inProcess()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	h, err := server.New(server.Config{Manager: l.mgr, Catalog: l.cat, Loopback: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// CompletionTokens is the number of tokens b's in-process engine has
// generated, cancelled answers included.
func CompletionTokens(t *testing.T, b *Backend) int {
	l, err := b.inProcess()
	if err != nil {
		t.Fatal(err)
	}
	return int(l.generated.Load())
}
