package acp

import (
	"io"
	"net/http"
	"sync"
)

// InProcessClient returns an HTTP client whose requests h serves in this
// process, without a socket: the reference server's handler (with its own
// engine Manager, load lock and budget) answers as it would over the
// network, streaming included.
func InProcessClient(h http.Handler) *http.Client {
	return &http.Client{Transport: handlerTransport{h}}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	w.resp = &http.Response{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req, Body: pr}
	req = req.Clone(req.Context())
	req.RequestURI = req.URL.RequestURI()
	if req.Host == "" {
		req.Host = req.URL.Host
	}
	req.RemoteAddr = "127.0.0.1:0"
	if req.Body == nil {
		req.Body = http.NoBody
	}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			_ = pw.Close()
		}()
		t.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.ready:
		return w.resp, nil
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
}

// pipeWriter is a ResponseWriter whose body is the pipe the client reads;
// the response is handed over at the first WriteHeader.
type pipeWriter struct {
	header http.Header
	body   *io.PipeWriter
	resp   *http.Response
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.resp.StatusCode = status
		w.resp.Status = http.StatusText(status)
		w.resp.Header = w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush is a no-op: every Write reaches the reader at once.
func (w *pipeWriter) Flush() {}
