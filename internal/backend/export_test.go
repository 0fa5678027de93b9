package backend

import (
	"net/http"
	"testing"
)

// HandlerOf returns b's in-process handler, built if need be.
func HandlerOf(t *testing.T, b *Backend) http.Handler {
	l, err := b.inProcess()
	if err != nil {
		t.Fatal(err)
	}
	return l.tr.h
}
