package backend

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// handlerTransport is an http.RoundTripper that serves every request with
// an in-process handler, streaming its response body through a pipe so a
// streamed answer arrives chunk by chunk and closing the body cancels the
// handler's request context.
type handlerTransport struct {
	h  http.Handler
	wg sync.WaitGroup // handlers still running
}

func (t *handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx)
	r.Host = "127.0.0.1" // the handler's loopback Host check
	r.RemoteAddr = "127.0.0.1:0"
	r.RequestURI = r.URL.RequestURI()
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer cancel()
		t.h.ServeHTTP(w, r)
		w.WriteHeader(http.StatusOK) // a handler that wrote nothing
		pw.Close()
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: &cancelBody{ReadCloser: pr, cancel: cancel}, ContentLength: -1, Request: req,
	}, nil
}

// wait blocks until every handler has returned.
func (t *handlerTransport) wait() { t.wg.Wait() }

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	b.cancel()
	return b.ReadCloser.Close()
}

// pipeWriter is the handler's ResponseWriter; the status and headers are
// published once, at the first write.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	status int
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush is a no-op: every write already reaches the reader.
func (w *pipeWriter) Flush() {}
