package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/scripted"
	"github.com/prism-local/prism/internal/testproc"
)

// The scripted models' greedy outputs: "think" (listed first, so the
// default) and "weather-json".
const (
	answer     = "<think>\nplan\n</think>\n\nHello from Prism."
	jsonAnswer = `{"city": "Paris", "temperature": 21}`
)

// mcpBinary is examples/mcp, built once for the package's tests.
var mcpBinary = testproc.Binary{Package: "."}

// models are "think" (listed first, so the default) and
// "weather-json", written once for the package's tests.
var models = scripted.Folder{Models: []scripted.Model{
	{Name: "think", Answer: answer, Context: 256},
	{Name: "weather-json", Answer: jsonAnswer, Context: 256},
}}

func TestMain(m *testing.M) {
	code := m.Run()
	mcpBinary.Remove()
	models.Remove()
	os.Exit(code)
}

// closedURL is an API root nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// environ is the server's environment: its own home, an unreachable
// reference server, the CPU, the scripted models when withModels.
func environ(t *testing.T, withModels bool, extra ...string) []string {
	env := testproc.Environ("PRISM_")
	if lib, ok := os.LookupEnv("PRISM_ORT_LIB"); ok {
		env = append(env, "PRISM_ORT_LIB="+lib)
	}
	env = append(env, "PRISM_HOME="+t.TempDir(), "PRISM_BASE_URL="+closedURL(t), "PRISM_DEVICE=cpu")
	if withModels {
		env = append(env, "PRISM_MODELS_DIR="+models.Path(t))
	}
	return append(env, extra...)
}

func runNode(t *testing.T, script string, env []string) {
	t.Helper()
	path := fixtures.NodeScript(t, script)
	cmd := exec.CommandContext(t.Context(), "node", path)
	cmd.Env = append(env, "MCP_BIN="+mcpBinary.Path(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	if !bytes.Contains(out, []byte(`"ok":true`)) {
		t.Fatalf("node %s did not finish:\n%s", script, out)
	}
}

// TestNodeClientGenerate: the official TypeScript client lists the tools
// (each with both schemas) and calls generate on the scripted model, with
// progress, through the in-process fallback.
func TestNodeClientGenerate(t *testing.T) {
	runNode(t, "testdata/generate.mjs", environ(t, true))
}

// TestNodeTwoProcessesSignals: SPEC-041 §4 across two server processes
// sharing one SQLite store.
func TestNodeTwoProcessesSignals(t *testing.T) {
	mcpBinary.Path(t)
	db := filepath.Join(t.TempDir(), "shared", "signals.db")
	runNode(t, "testdata/signals.mjs", environ(t, false, "PRISM_SIGNALS_DB="+db))
}

// proc is a running server with raw stdio.
type proc struct {
	*testproc.Process
	lines chan string
}

// start runs the server with env and args; when t ends it is killed.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(mcpBinary.Path(t), args...)
	cmd.Env = env
	p := &proc{Process: testproc.Start(t, cmd, testproc.Stdio()), lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(p.Stdout())
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

func (p *proc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.Stdin(), line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// next returns the next message written, decoded.
func (p *proc) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("stdout closed; stderr:\n%s", p.Stderr())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30 s")
	}
	return nil
}

func (p *proc) initialize(t *testing.T) {
	t.Helper()
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := p.next(t); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (p *proc) exit(t *testing.T, within time.Duration) (int, string) {
	t.Helper()
	code, err := p.ExitCode(within)
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, p.Stderr())
	}
	return code, p.Stderr()
}

// TestRobustness: malformed JSON, values that are not requests and unknown
// methods get their JSON-RPC errors, and the session goes on.
func TestRobustness(t *testing.T) {
	p := start(t, environ(t, false))
	p.initialize(t)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	cases := []struct {
		line string
		id   any
		code float64
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, nil, -32700},
		{`not json at all`, nil, -32700},
		{deep, nil, -32700},
		{`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, nil, -32600},
		{`42`, nil, -32600},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, nil, -32600},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, 3.0, -32600},
		{`{"jsonrpc":"2.0","id":4,"method":7}`, 4.0, -32600},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}`, 5.0, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"no/such/method"}`, 6.0, -32601},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool"}}`, 7.0, 0},
	}
	for _, c := range cases {
		p.send(t, c.line)
		m := p.next(t)
		if m["id"] != c.id {
			t.Errorf("%.60s: id %v, want %v (%v)", c.line, m["id"], c.id, m)
		}
		e, _ := m["error"].(map[string]any)
		if c.code == 0 {
			if e == nil && m["result"] == nil {
				t.Errorf("%.60s: no answer: %v", c.line, m)
			}
			continue
		}
		if e == nil || e["code"] != c.code {
			t.Errorf("%.60s: %v, want error %v", c.line, m, c.code)
		}
	}
	// A notification of an unknown method is dropped; the session is alive.
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/whatever"}`)
	p.send(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if m := p.next(t); m["id"] != 8.0 || m["result"] == nil {
		t.Errorf("ping after the bad lines: %v", m)
	}
	p.Stdin().Close()
	if code, stderr := p.exit(t, 10*time.Second); code != 0 || strings.Contains(stderr, "panic") {
		t.Errorf("exit %d after stdin closed; stderr:\n%s", code, stderr)
	}
}

// TestClosedStdout: a client that closes its end of stdout does not crash
// the server (no SIGPIPE death, no panic); it exits 0 when stdin ends.
func TestClosedStdout(t *testing.T) {
	cmd := exec.Command(mcpBinary.Path(t))
	cmd.Env = environ(t, false)
	p := testproc.Start(t, cmd, testproc.Stdio())
	p.Stdout().Close()
	for i := range 20 {
		if _, err := io.WriteString(p.Stdin(), `{"jsonrpc":"2.0","id":`+string(rune('0'+i%10))+`,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"); err != nil {
			break // the server may have left already
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Stdin().Close()
	if err := p.Wait(15 * time.Second); errors.Is(err, testproc.ErrRunning) {
		t.Fatalf("still running; stderr:\n%s", p.Stderr())
	} else if err != nil {
		t.Errorf("exit: %v; stderr:\n%s", err, p.Stderr())
	}
	if strings.Contains(p.Stderr(), "panic") {
		t.Errorf("stderr:\n%s", p.Stderr())
	}
}

// TestAutoStop: PRISM_MCP_AUTO_STOP_SEC ends an idle server with exit 0
// and a one-line notice naming the variable.
func TestAutoStop(t *testing.T) {
	p := start(t, environ(t, false, "PRISM_MCP_AUTO_STOP_SEC=0.5"))
	p.initialize(t)
	code, stderr := p.exit(t, 20*time.Second)
	if code != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	var notice []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "PRISM_MCP_AUTO_STOP_SEC") {
			notice = append(notice, l)
		}
	}
	if len(notice) != 1 || !strings.HasPrefix(notice[0], "prism mcp: no tool call for") {
		t.Errorf("want one notice line naming PRISM_MCP_AUTO_STOP_SEC; stderr:\n%s", stderr)
	}
}

// TestAutoStopWaitsForTheCallInFlight: a call that outlasts the window
// (here the model load) still gets its answer; the window restarts after.
func TestAutoStopWaitsForTheCallInFlight(t *testing.T) {
	p := start(t, environ(t, true, "PRISM_MCP_AUTO_STOP_SEC=0.3"))
	p.initialize(t)
	begun := time.Now()
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate","arguments":{"prompt":"hi"}}}`)
	m := p.next(t)
	res, _ := m["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		t.Fatalf("generate: %v", m)
	}
	if took := time.Since(begun); took < 300*time.Millisecond {
		t.Logf("the call took %s, shorter than the window; the test proves less", took)
	}
	if code, stderr := p.exit(t, 20*time.Second); code != 0 || !strings.Contains(stderr, "PRISM_MCP_AUTO_STOP_SEC") {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
}

// TestAutoStopNegative: a negative window is a start-up error naming the
// variable.
func TestAutoStopNegative(t *testing.T) {
	cmd := exec.Command(mcpBinary.Path(t))
	cmd.Env = environ(t, false, "PRISM_MCP_AUTO_STOP_SEC=-1")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "PRISM_MCP_AUTO_STOP_SEC") {
		t.Errorf("err %v, output:\n%s", err, out)
	}
}

// TestIdleUnload: an in-process model unused for -idle-unload is unloaded;
// status reports no resident model then.
func TestIdleUnload(t *testing.T) {
	p := start(t, environ(t, true), "-idle-unload", "300ms")
	p.initialize(t)
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate","arguments":{"prompt":"hi"}}}`)
	if m := p.next(t); m["result"] == nil {
		t.Fatalf("generate: %v", m)
	}
	deadline := time.Now().Add(20 * time.Second)
	for id := 2; ; id++ {
		p.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"status","arguments":{}}}`)
		m := p.next(t)
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc == nil {
			t.Fatalf("status: %v", m)
		}
		if sc["resident_model"] == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the model is still resident: %v", sc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
