package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// syncBuffer is an io.Writer safe for the writers of one Conn.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

func TestDecodeClassifies(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for _, tc := range []struct {
		name, line string
		drop       bool
		code       int
		kind       string
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, false, 0, "request"},
		{"string id", `{"jsonrpc":"2.0","id":"a","method":"m"}`, false, 0, "request"},
		{"notification", `{"jsonrpc":"2.0","method":"m"}`, false, 0, "notification"},
		{"response", `{"jsonrpc":"2.0","id":3,"result":{}}`, false, 0, "response"},
		{"error response", `{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}`, false, 0, "response"},
		{"not json", `hello`, true, 0, ""},
		{"array", `[1]`, true, 0, ""},
		{"truncated", `{"jsonrpc":"2.0",`, true, 0, ""},
		{"deep", `{"jsonrpc":"2.0","id":1,"method":"m","params":` + deep + `}`, true, 0, ""},
		{"deep in a string is fine", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + deep + `"}}`, false, 0, "request"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"m"}`, true, 0, ""},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":7}`, false, CodeInvalidRequest, ""},
		{"no version", `{"id":1,"method":"m"}`, false, CodeInvalidRequest, ""},
		{"neither", `{"jsonrpc":"2.0"}`, false, CodeInvalidRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode([]byte(tc.line))
			if tc.drop {
				if !errors.Is(err, errDrop) {
					t.Fatalf("err = %v, want a drop", err)
				}
				return
			}
			var rpc *Error
			if tc.code != 0 {
				if !errors.As(err, &rpc) || rpc.Number != tc.code {
					t.Fatalf("err = %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[bool]string{true: "request"}[m.IsRequest()] + map[bool]string{true: "notification"}[m.IsNotification()] + map[bool]string{true: "response"}[m.IsResponse()]
			if got != tc.kind {
				t.Fatalf("kind %q, want %q", got, tc.kind)
			}
		})
	}
}

func TestServeAnswersAndDrops(t *testing.T) {
	in := strings.Join([]string{
		`garbage`,
		`{"jsonrpc":"2.0","id":1,"method":"boom"}`,
		`{"jsonrpc":"2.0","id":2,"method":7}`,
		`{"jsonrpc":"2.0","id":3,"method":"echo","params":{"x":1}}`,
	}, "\n")
	var out syncBuffer
	c := NewConn(strings.NewReader(in), &out, quiet())
	err := c.Serve(t.Context(), func(ctx context.Context, m *Message) {
		if m.Method == "boom" {
			panic("handler bug")
		}
		_ = c.Reply(m.ID, m.Params)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error handling boom"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"method must be a non-empty string"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"x":1}}`,
	}
	if got := out.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCallGetsReplyAndFailsOnClose(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, quiet())
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background(), func(context.Context, *Message) {}) }()
	// The peer answers the first request and then hangs up on the second.
	go func() {
		dec := json.NewDecoder(outR)
		var req struct {
			ID int64 `json:"id"`
		}
		_ = dec.Decode(&req)
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":`+jsonInt(req.ID)+`,"result":{"ok":true}}`+"\n")
		_ = dec.Decode(&req)
		_ = inW.Close()
		_, _ = io.Copy(io.Discard, outR)
	}()
	res, err := c.Call(t.Context(), "first", nil)
	if err != nil || string(res) != `{"ok":true}` {
		t.Fatalf("first call: %s, %v", res, err)
	}
	_, err = c.Call(t.Context(), "second", nil)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("second call: %v, want ErrClosed", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(t.Context(), "third", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
	if c.Pending() != 0 {
		t.Fatalf("%d calls still pending", c.Pending())
	}
	_ = outW.Close()
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestCallHonoursContext(t *testing.T) {
	inR, inW := io.Pipe()
	c := NewConn(inR, io.Discard, quiet())
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background(), func(context.Context, *Message) {}) }()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Call(ctx, "m", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if c.Pending() != 0 {
		t.Fatal("a cancelled call stayed pending")
	}
	_ = inW.Close()
	<-done
}

type brokenWriter struct{ n int }

func (b *brokenWriter) Write(p []byte) (int, error) {
	b.n++
	return 0, errors.New("broken pipe")
}

func TestBrokenOutputIsStickyAndQuiet(t *testing.T) {
	w := &brokenWriter{}
	c := NewConn(strings.NewReader(""), w, quiet())
	for range 3 {
		if err := c.Notify("m", nil); !errors.Is(err, ErrBroken) {
			t.Fatalf("err = %v", err)
		}
	}
	if w.n != 1 {
		t.Fatalf("wrote %d times after the output broke, want 1", w.n)
	}
}

func TestOverlongLineIsDropped(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + strings.Repeat("x", MaxLine) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"m"}` + "\n"
	var out syncBuffer
	c := NewConn(strings.NewReader(in), &out, quiet())
	if err := c.Serve(t.Context(), func(_ context.Context, m *Message) { _ = c.Reply(m.ID, "ok") }); err != nil {
		t.Fatal(err)
	}
	if got := out.lines(); len(got) != 1 || got[0] != `{"jsonrpc":"2.0","id":2,"result":"ok"}` {
		t.Fatalf("got %q", got)
	}
}
