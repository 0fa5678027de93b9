package sse_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/app/sse"
	"github.com/prism-local/prism/internal/app/wire"
)

type event struct{ name, data string }

// parse reads events the way the SSE specification's parser does: lines
// end at \n, \r or \r\n; data lines are joined with \n; a blank line ends
// an event.
func parse(t *testing.T, stream string) []event {
	t.Helper()
	var out []event
	var cur event
	var data []string
	for len(stream) > 0 {
		i := strings.IndexAny(stream, "\r\n")
		if i < 0 {
			t.Fatalf("stream does not end with a line break: %q", stream)
		}
		line := stream[:i]
		if stream[i] == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
			i++
		}
		stream = stream[i+1:]
		switch {
		case line == "":
			cur.data = strings.Join(data, "\n")
			out = append(out, cur)
			cur, data = event{}, nil
		case strings.HasPrefix(line, "event: "):
			cur.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):])
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if data != nil || cur.name != "" {
		t.Fatalf("unterminated event")
	}
	return out
}

type flushCounter struct {
	bytes.Buffer
	flushes int
}

func (f *flushCounter) flush() error { f.flushes++; return nil }

func TestEvents(t *testing.T) {
	var out flushCounter
	w := sse.New(&out, out.flush)
	steps := []func() error{
		func() error { return w.Data([]byte(`{"a":1}`)) },
		func() error { return w.Event("response.output_text.delta", []byte(`{"delta":"x"}`)) },
		func() error { return w.Data([]byte("two\nlines\r\nand\rmore")) },
		func() error { return w.JSON(map[string]string{"k": "v\n"}) },
		func() error { return w.EventJSON("response.completed", []int{1}) },
		w.Done,
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	want := []event{{"", `{"a":1}`}, {"response.output_text.delta", `{"delta":"x"}`}, {"", "two\nlines\nand\nmore"},
		{"", `{"k":"v\n"}`}, {"response.completed", "[1]"}, {"", "[DONE]"}}
	got := parse(t, out.String())
	if len(got) != len(want) {
		t.Fatalf("events %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %q, want %q", i, got[i], want[i])
		}
	}
	if out.flushes != len(steps) {
		t.Errorf("%d flushes for %d events", out.flushes, len(steps))
	}
	for _, bad := range []string{"", "a\nb", "a\r"} {
		if err := w.Event(bad, nil); err == nil {
			t.Errorf("event name %q accepted", bad)
		}
	}
}

// The chunks of the hot path survive the trip through the stream for any
// text, invalid UTF-8 and control characters included.
func TestChunksRoundTrip(t *testing.T) {
	var out bytes.Buffer
	w := sse.New(&out, nil)
	enc := wire.NewChunkEncoder("chatcmpl-1", "m", 1)
	r := rand.New(rand.NewPCG(3, 4))
	var pieces []string
	var buf []byte
	for range 5000 {
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		pieces = append(pieces, string(b))
		buf = enc.AppendContent(buf[:0], string(b))
		if err := w.Data(buf); err != nil {
			t.Fatal(err)
		}
	}
	events := parse(t, out.String())
	if len(events) != len(pieces) {
		t.Fatalf("%d events for %d pieces", len(events), len(pieces))
	}
	for i, e := range events {
		var c wire.ChatChunk
		if err := json.Unmarshal([]byte(e.data), &c); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		std, _ := json.Marshal(pieces[i])
		var want string
		_ = json.Unmarshal(std, &want)
		if got := *c.Choices[0].Delta.Content; got != want {
			t.Fatalf("piece %d: %q, want %q", i, got, want)
		}
	}
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.ErrClosedPipe
	}
	f.n--
	return len(p), nil
}

func TestWriteErrorIsSticky(t *testing.T) {
	w := sse.New(&failing{n: 1}, nil)
	if err := w.Data([]byte("1")); err != nil {
		t.Fatal(err)
	}
	first := w.Data([]byte("2"))
	if !errors.Is(first, io.ErrClosedPipe) {
		t.Fatalf("err = %v", first)
	}
	if err := w.Done(); err != first || w.Err() != first {
		t.Errorf("later write returned %v, Err %v; want the first error", err, w.Err())
	}
	flushFails := sse.New(io.Discard, func() error { return http.ErrAbortHandler })
	if err := flushFails.Data(nil); !errors.Is(err, http.ErrAbortHandler) {
		t.Errorf("flush error: %v", err)
	}
}

func TestStart(t *testing.T) {
	rec := httptest.NewRecorder()
	w, err := sse.Start(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Done(); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" || rec.Header().Get("Cache-Control") != "no-cache" || !rec.Flushed {
		t.Errorf("status %d headers %v flushed %v", rec.Code, rec.Header(), rec.Flushed)
	}
	if rec.Body.String() != "data: [DONE]\n\n" {
		t.Errorf("body %q", rec.Body.String())
	}
	if _, err := sse.Start(noFlush{rec}); err == nil {
		t.Error("a ResponseWriter that cannot flush was accepted")
	}
}

type noFlush struct{ w http.ResponseWriter }

func (n noFlush) Header() http.Header         { return n.w.Header() }
func (n noFlush) Write(b []byte) (int, error) { return n.w.Write(b) }
func (n noFlush) WriteHeader(code int)        { n.w.WriteHeader(code) }

// Over a real HTTP connection, each event reaches the client as it is
// written.
func TestStartOverHTTP(t *testing.T) {
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := sse.Start(rw)
		if err != nil {
			t.Error(err)
			return
		}
		for i := range 3 {
			if err := w.Event("tick", []byte{'0' + byte(i)}); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		var lines [3]string
		for j := range lines {
			if lines[j], err = br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		if want := "event: tick\ndata: " + string('0'+rune(i)) + "\n\n"; strings.Join(lines[:], "") != want {
			t.Fatalf("event %d: %q", i, lines)
		}
		next <- struct{}{} // the next event is written only after this one was read
	}
}
