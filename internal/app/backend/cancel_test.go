package backend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/prism-local/prism/internal/app/wire"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/internal/app/mcpserver"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/internal/scripted"
)

// The slow model's shape: it says slowWord and then repeats slowFill until
// max_tokens or its slowContext positions run out, so an uncancelled
// generation is thousands of tokens long.
const (
	slowContext = 4096
	slowWord    = "Waves"
	slowFill    = " sea"
	// fewTokens bounds the tokens a cancelled generation may count: the
	// first progress notification's token, plus those generated while the
	// cancel crosses the MCP session and the HTTP request (a loaded
	// machine under -race included).
	fewTokens = 48
)

// slowModels is a models directory of its own with the folder "slow",
// written once for the package.
var slowModels = scripted.Folder{Then: func(ctx context.Context, w *scripted.Writer, root string) error {
	fill := w.Encode(slowFill)
	if len(fill) != 1 {
		return fmt.Errorf("%q is %d tokens, want one", slowFill, len(fill))
	}
	return w.Write(ctx, root, scripted.Model{Name: "slow", Answer: slowWord, Context: slowContext,
		Configure: func(c *onnxgen.Config) {
			// The token after the script is an ordinary one, not the EOS
			// the configs name, so the model never stops by itself.
			c.ScriptEOS = int(fill[0])
			c.EOS = []int{int(w.EOS())}
		}})
}}

// slowEnv is environ with the loop guard off: the slow model's endless
// repetition is what the tests need.
// slowEnv lets the slow model's filler run on, one token per step: a
// verify step would yield a run of the filler at once, and the counts
// below are about steps.
func slowEnv(t *testing.T) []string {
	return append(environ(t), "PRISM_LOOP_GUARD=off", "PRISM_SPECULATE=off")
}

// connect serves srv over stdio-like pipes (Server.Serve, its framing
// guard included) to a Go SDK client whose first progress notification of
// a call runs onProgress.
func connect(t *testing.T, srv *mcpserver.Server, onProgress func()) *mcp.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, sr, sw) }()
	var once sync.Once
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(onProgress) }})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		stop()
		<-done
		sw.Close()
		cw.Close()
	})
	return cs
}

// serverSide reads the answering engine: its /health and its /metrics.
type serverSide struct {
	h http.Handler
}

func (s serverSide) get(t *testing.T, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1"+path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// completionTokens is prism_completion_tokens_total: every token the
// engine generated, cancelled generations included.
func (s serverSide) completionTokens(t *testing.T) int {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(s.get(t, "/metrics")))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "prism_completion_tokens_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(f)
		}
	}
	t.Fatal("no prism_completion_tokens_total in /metrics")
	return 0
}

func (s serverSide) health(t *testing.T) wire.Health {
	t.Helper()
	var h wire.Health
	if err := json.Unmarshal([]byte(s.get(t, "/health")), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// cancelCase is one generation tool called with a progress token and
// cancelled at its first progress notification.
type cancelCase struct {
	tool string
	args map[string]any
	// full is what the call would generate uncancelled.
	full int
}

var cancelCases = []cancelCase{
	{"generate", map[string]any{"prompt": "hi", "max_tokens": 3000}, 3000},
	{"benchmark", map[string]any{"max_tokens": 512}, 512},
}

// cancelAtFirstProgress calls c.tool, cancels it at its first progress
// notification and returns once the call has ended.
func cancelAtFirstProgress(t *testing.T, srv *mcpserver.Server, c cancelCase) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := connect(t, srv, cancel)
	p := &mcp.CallToolParams{Name: c.tool, Arguments: c.args}
	p.SetProgressToken("p")
	res, err := cs.CallTool(ctx, p)
	if err == nil {
		t.Fatalf("%s ended with a result after the cancel: %+v", c.tool, res.StructuredContent)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: %v, want context.Canceled", c.tool, err)
	}
}

// stoppedWithinFewTokens waits for the engine to be idle (the generation
// released it) and checks it generated only a few tokens of the full run.
func stoppedWithinFewTokens(t *testing.T, c cancelCase, idle func() bool, tokens func() int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !idle() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the engine is still busy 30 s after the cancel", c.tool)
		}
		time.Sleep(5 * time.Millisecond)
	}
	n := tokens()
	t.Logf("%s: %d of %d tokens generated before the cancel took effect", c.tool, n, c.full)
	if n < 1 || n > fewTokens {
		t.Errorf("%s: %d tokens generated, want 1 to %d (the generation did not stop at the cancel)", c.tool, n, fewTokens)
	}
}

func mcpServer(t *testing.T, b *backend.Backend) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Config{Backend: b, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestMCPCancelInProcess: generate and benchmark on the in-process
// fallback stop generating when the MCP client cancels; the status tool
// then shows the engine idle with nothing queued.
func TestMCPCancelInProcess(t *testing.T) {
	root := slowModels.Path(t)
	for _, c := range cancelCases {
		t.Run(c.tool, func(t *testing.T) {
			b := backend.New(backend.Config{BaseURL: closedURL(t), Sources: catalog.Sources{ModelsDirs: []string{root}}, Environ: slowEnv(t), Logger: quiet})
			defer b.Close()
			srv := mcpServer(t, b)
			cancelAtFirstProgress(t, srv, c)
			status := connect(t, srv, func() {})
			stoppedWithinFewTokens(t, c, func() bool {
				st := call(t, status, "status")
				if st["backend"] != backend.KindInProcess {
					t.Fatalf("status backend %v, want in-process", st["backend"])
				}
				return st["busy"] == false && st["queue_depth"] == 0.0
			}, func() int { return backend.CompletionTokens(t, b) })
		})
	}
}

// TestMCPCancelThroughServer: generate and benchmark answered by a running
// reference server stop there when the MCP client cancels: the server's
// /health shows it idle and its /metrics count only a few tokens.
func TestMCPCancelThroughServer(t *testing.T) {
	root := slowModels.Path(t)
	for _, c := range cancelCases {
		t.Run(c.tool, func(t *testing.T) {
			ref := backend.New(backend.Config{Local: true, Sources: catalog.Sources{ModelsDirs: []string{root}}, Environ: slowEnv(t), Logger: quiet})
			defer ref.Close()
			side := serverSide{backend.HandlerOf(t, ref)}
			hs := httptest.NewServer(side.h)
			defer hs.Close()
			b := backend.New(backend.Config{BaseURL: hs.URL + "/v1", Logger: quiet})
			defer b.Close()
			cancelAtFirstProgress(t, mcpServer(t, b), c)
			stoppedWithinFewTokens(t, c, func() bool {
				h := side.health(t)
				return !h.Busy && h.QueueDepth == 0
			}, func() int { return side.completionTokens(t) })
			if b.Resident() {
				t.Error("the MCP server loaded a model of its own")
			}
		})
	}
}

// TestSlowModelRunsLong: uncancelled, the slow model generates every token
// asked for, so the counts above are the cancel's doing.
func TestSlowModelRunsLong(t *testing.T) {
	b := backend.New(backend.Config{Local: true, Sources: catalog.Sources{ModelsDirs: []string{slowModels.Path(t)}}, Environ: slowEnv(t), Logger: quiet})
	defer b.Close()
	cs := connect(t, mcpServer(t, b), func() {})
	start := time.Now()
	out := call(t, cs, "benchmark", "max_tokens", 512.0)
	t.Logf("512 tokens in %v", time.Since(start))
	if out["completion_tokens"] != 512.0 {
		t.Errorf("benchmark %v, want 512 completion tokens", out)
	}
}

// call runs a tool with the given name/value argument pairs and returns
// its structured result.
func call(t *testing.T, cs *mcp.ClientSession, name string, kv ...any) map[string]any {
	t.Helper()
	args := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
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

// TestMCPCancelOverHTTP: over streamable HTTP, in both protocol eras (a
// 2025-11-25 session's notifications/cancelled, a stateless 2026-07-28
// call's dropped request), a cancelled generate stops the engine.
func TestMCPCancelOverHTTP(t *testing.T) {
	root := slowModels.Path(t)
	c := cancelCases[0]
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			b := backend.New(backend.Config{Local: true, Sources: catalog.Sources{ModelsDirs: []string{root}}, Environ: slowEnv(t), Logger: quiet})
			defer b.Close()
			srv := mcpServer(t, b)
			hs := httptest.NewServer(srv.HTTPHandler())
			defer hs.Close()
			defer srv.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var once sync.Once
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(cancel) }})
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			p := &mcp.CallToolParams{Name: c.tool, Arguments: c.args}
			p.SetProgressToken("p")
			if _, err := cs.CallTool(ctx, p); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want context.Canceled", c.tool, err)
			}
			stoppedWithinFewTokens(t, c, func() bool {
				h, err := b.Status(t.Context())
				return err == nil && !h.Busy && h.QueueDepth == 0
			}, func() int { return backend.CompletionTokens(t, b) })
		})
	}
}
