package sse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Writer writes the events of one stream. It is not safe for concurrent
// use.
type Writer struct {
	w     io.Writer
	flush func() error
	buf   []byte
	err   error
}

// New returns a Writer over w that calls flush after each event (nil for a
// writer that needs none).
func New(w io.Writer, flush func() error) *Writer {
	return &Writer{w: w, flush: flush, buf: make([]byte, 0, 1024)}
}

// Start begins an event stream on an HTTP response: it sets the event-stream
// headers, sends status 200 and flushes, so the headers are committed. Call
// it only once everything that can fail before the first token has been
// resolved (spec I3). A ResponseWriter that cannot flush is an error: its
// events would arrive all at once, at the end.
func Start(w http.ResponseWriter) (*Writer, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies that buffer by default pass events on at once
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return nil, fmt.Errorf("start event stream: %w", err)
	}
	return New(w, rc.Flush), nil
}

// Err returns the error that ended the stream, nil while it is writable.
func (w *Writer) Err() error { return w.err }

// Data writes an event with payload as its data and no name: the form of
// chat and text completion chunks.
func (w *Writer) Data(payload []byte) error {
	return w.event("", payload)
}

// Event writes an event named name (the Responses API's event types).
func (w *Writer) Event(name string, payload []byte) error {
	if name == "" || strings.ContainsAny(name, "\r\n") {
		return fmt.Errorf("sse: event name %q is empty or holds a line break", name)
	}
	return w.event(name, payload)
}

// JSON writes v, encoded by encoding/json, as an unnamed event.
func (w *Writer) JSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("sse: encode event: %w", err)
	}
	return w.Data(b)
}

// EventJSON writes v, encoded by encoding/json, as an event named name.
func (w *Writer) EventJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("sse: encode event %s: %w", name, err)
	}
	return w.Event(name, b)
}

var done = []byte("[DONE]")

// Done writes "data: [DONE]", the end of an OpenAI chat or completion
// stream.
func (w *Writer) Done() error { return w.Data(done) }

// event frames one event in the reused buffer and writes and flushes it.
// A payload with line breaks (not JSON from encoding/json, which has none)
// becomes several data lines, which a client joins back with "\n".
func (w *Writer) event(name string, payload []byte) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	for {
		i := bytes.IndexAny(payload, "\r\n")
		if i < 0 {
			break
		}
		b = append(b, "data: "...)
		b = append(b, payload[:i]...)
		b = append(b, '\n')
		if payload[i] == '\r' && i+1 < len(payload) && payload[i+1] == '\n' {
			i++
		}
		payload = payload[i+1:]
	}
	b = append(b, "data: "...)
	b = append(b, payload...)
	b = append(b, '\n', '\n')
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("sse: write event: %w", err)
		return w.err
	}
	if w.flush != nil {
		if err := w.flush(); err != nil {
			w.err = fmt.Errorf("sse: flush event: %w", err)
			return w.err
		}
	}
	return nil
}
