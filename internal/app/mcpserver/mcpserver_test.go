package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/internal/app/mcpserver"
	"github.com/prism-local/prism/signals/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newServer(t *testing.T) *mcpserver.Server {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	quiet := slog.New(slog.DiscardHandler)
	b := backend.New(backend.Config{Local: true, Logger: quiet})
	t.Cleanup(func() { b.Close() })
	srv, err := mcpserver.New(mcpserver.Config{Backend: b, Store: store, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: %v", name, res.Content[0].(*mcp.TextContent).Text)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// signalsRoundTrip runs start, send-to-self, checkpoint and status with
// the session passed explicitly (what a stateless client must do).
func signalsRoundTrip(t *testing.T, cs *mcp.ClientSession, identity string) {
	t.Helper()
	started := call(t, cs, "prism_start", map[string]any{"identity": identity})
	session, _ := started["session"].(string)
	if session == "" {
		t.Fatalf("prism_start: %v", started)
	}
	if _, ok := started["pending_signals"]; ok {
		t.Errorf("prism_start carries pending_signals: %v", started)
	}
	// A send piggybacks the sender's own queue: a note to oneself comes
	// straight back.
	sent := call(t, cs, "prism_send_signal", map[string]any{"session": session, "to": identity, "type": "note", "payload": map[string]any{"k": "v"}})
	if sigs, _ := sent["pending_signals"].([]any); len(sigs) != 1 || sigs[0].(map[string]any)["type"] != "note" {
		t.Errorf("prism_send_signal pending_signals %v, want the note", sent["pending_signals"])
	}
	call(t, cs, "prism_send_signal", map[string]any{"session": session, "to": "peer-of-" + identity, "type": "later"})
	cp := call(t, cs, "prism_checkpoint", map[string]any{"session": session})
	if _, ok := cp["pending_signals"]; ok {
		t.Errorf("prism_checkpoint carries pending_signals: %v", cp)
	}
	st := call(t, cs, "prism_status", map[string]any{"session": session})
	if sigs, ok := st["pending_signals"].([]any); !ok || len(sigs) != 0 {
		t.Errorf("prism_status pending_signals %v, want an empty array", st["pending_signals"])
	}
}

// TestHTTPBothEras: one URL serves a 2026-07-28 client (stateless, no
// handshake) and a 2025-11-25 client (initialize, a session).
func TestHTTPBothEras(t *testing.T) {
	srv := newServer(t)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler())
	hs := httptest.NewServer(mux)
	defer srv.Close()
	defer hs.Close()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s, want %s", got, version)
			}
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 11 {
				t.Errorf("%d tools, want 11", len(tools.Tools))
			}
			signalsRoundTrip(t, cs, "agent-"+version)
		})
	}
}

// TestStdioNewEra: over stdio a 2026-07-28 client needs no session
// argument: the connection is the MCP session that started.
func TestStdioNewEra(t *testing.T) {
	srv := newServer(t)
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, sr, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Errorf("negotiated %s", got)
	}
	call(t, cs, "prism_start", map[string]any{"identity": "Donna"})
	st := call(t, cs, "prism_status", nil)
	if st["identity"] != "Donna" {
		t.Errorf("prism_status %v", st)
	}
	cs.Close()
	cancel()
	<-done
	sw.Close()
	cw.Close()
}
