package sse_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prism-local/prism/internal/app/sse"
	"github.com/prism-local/prism/internal/app/wire"
)

const piece = " token"

// BenchmarkToken is the server's cost per streamed token without the
// network: encode the content delta chunk, frame it, write and flush.
func BenchmarkToken(b *testing.B) {
	enc := wire.NewChunkEncoder("chatcmpl-0123456789abcdef", "Qwen/Qwen2.5-0.5B-Instruct", 1764547200)
	w := sse.New(io.Discard, func() error { return nil })
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = enc.AppendContent(buf[:0], piece)
		if err := w.Data(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenHTTP is the same through net/http's ResponseWriter to a
// loopback client: each token is one chunked write and one flush, a system
// call, as in the server.
func BenchmarkTokenHTTP(b *testing.B) {
	ready := make(chan *sse.Writer)
	finished := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := sse.Start(rw)
		if err != nil {
			b.Error(err)
			return
		}
		ready <- w
		<-finished
	}))
	b.Cleanup(srv.Close)
	go func() {
		resp, err := srv.Client().Get(srv.URL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	w := <-ready
	enc := wire.NewChunkEncoder("chatcmpl-0123456789abcdef", "Qwen/Qwen2.5-0.5B-Instruct", 1764547200)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = enc.AppendContent(buf[:0], piece)
		if err := w.Data(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(finished)
}
