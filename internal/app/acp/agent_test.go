package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeGen answers from a script, one Answer per call, and records the
// messages each call saw. A nil step blocks until the context ends.
type fakeGen struct {
	mu     sync.Mutex
	steps  []*step
	seen   [][]Message
	models []string
}

type step struct {
	thought, text string
	calls         []ToolCall
	err           error
}

func call(name, args string) ToolCall {
	c := ToolCall{ID: "c" + name, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, args
	return c
}

func (g *fakeGen) Generate(ctx context.Context, model string, msgs []Message, tools []json.RawMessage, emit func(Delta) error) (Answer, error) {
	g.mu.Lock()
	g.seen = append(g.seen, msgs)
	var s *step
	if len(g.steps) > 0 {
		s, g.steps = g.steps[0], g.steps[1:]
	} else {
		s = &step{text: "again"}
	}
	g.mu.Unlock()
	if s == nil {
		_ = emit(Delta{Content: "partial"})
		<-ctx.Done()
		return Answer{}, ctx.Err()
	}
	if s.err != nil {
		return Answer{}, s.err
	}
	if s.thought != "" {
		_ = emit(Delta{Reasoning: s.thought})
	}
	if s.text != "" {
		_ = emit(Delta{Content: s.text})
	}
	return Answer{Content: s.text, ToolCalls: s.calls, Usage: Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
}

func (g *fakeGen) Models(context.Context) ([]string, error) { return g.models, nil }

func (g *fakeGen) history(i int) []Message {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[i]
}

// peer is the client end of an in-memory connection to Serve.
type peer struct {
	t      *testing.T
	in     *io.PipeWriter
	frames chan map[string]any
	done   chan error
}

func serve(t *testing.T, g Generator) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{t: t, in: inW, frames: make(chan map[string]any, 256), done: make(chan error, 1)}
	go func() {
		p.done <- Serve(context.Background(), Config{Generator: g, ContextSize: func(string) int { return 4096 },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, inR, outW)
		_ = outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				t.Errorf("not JSON: %s", sc.Text())
			}
			p.frames <- m
		}
		close(p.frames)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		if err := <-p.done; err != nil {
			t.Error(err)
		}
		for range p.frames {
		}
	})
	return p
}

func (p *peer) send(v any) {
	b, _ := json.Marshal(v)
	_, _ = p.in.Write(append(b, '\n'))
}

func (p *peer) request(id int, method string, params any) {
	p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

// until reads frames until the answer to id, returning the updates and
// the agent's requests before it; onRequest answers the agent's requests.
func (p *peer) until(id int, onRequest func(method string, params map[string]any) any) (map[string]any, []map[string]any) {
	p.t.Helper()
	var updates []map[string]any
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-p.frames:
			if !ok {
				p.t.Fatal("connection closed")
			}
			switch {
			case f["method"] == "session/update":
				updates = append(updates, f["params"].(map[string]any)["update"].(map[string]any))
			case f["method"] != nil:
				params, _ := f["params"].(map[string]any)
				res := onRequest(f["method"].(string), params)
				if e, ok := res.(error); ok {
					p.send(map[string]any{"jsonrpc": "2.0", "id": f["id"], "error": map[string]any{"code": -32000, "message": e.Error()}})
				} else {
					p.send(map[string]any{"jsonrpc": "2.0", "id": f["id"], "result": res})
				}
			case f["id"] == float64(id):
				return f, updates
			}
		case <-timeout:
			p.t.Fatalf("no answer to %d", id)
		}
	}
}

func noRequests(t *testing.T) func(string, map[string]any) any {
	return func(m string, _ map[string]any) any { t.Errorf("unexpected request %s", m); return errors.New("no") }
}

func (p *peer) open(read, write bool) string {
	p.request(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": read, "writeTextFile": write}}})
	p.until(1, noRequests(p.t))
	p.request(2, "session/new", map[string]any{"cwd": "/w"})
	f, _ := p.until(2, noRequests(p.t))
	return f["result"].(map[string]any)["sessionId"].(string)
}

func promptParams(s, text string) map[string]any {
	return map[string]any{"sessionId": s, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

func TestFailedPromptLeavesNoDanglingTurn(t *testing.T) {
	g := &fakeGen{models: []string{"m"}, steps: []*step{
		{text: "first answer"},
		{calls: []ToolCall{call("read_file", `{"path":"a"}`)}}, {err: errors.New("503 Service Unavailable: server_busy")},
		{text: "third answer"},
	}}
	p := serve(t, g)
	s := p.open(true, false)
	p.request(3, "session/prompt", promptParams(s, "one"))
	p.until(3, noRequests(t))
	p.request(4, "session/prompt", promptParams(s, "two"))
	f, _ := p.until(4, func(string, map[string]any) any { return map[string]any{"content": "A"} })
	e, _ := f["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32000) || !strings.Contains(e["message"].(string), "server_busy") {
		t.Fatalf("answer %v", f)
	}
	p.request(5, "session/prompt", promptParams(s, "three"))
	p.until(5, noRequests(t))
	got := g.history(3)
	var roles []string
	for _, m := range got {
		roles = append(roles, m.Role+":"+m.Content)
	}
	if j := strings.Join(roles, " | "); j != "user:one | assistant:first answer | user:three" {
		t.Errorf("history of the third prompt: %s", j)
	}
}

func TestCancelMidStreamKeepsPartialTurn(t *testing.T) {
	g := &fakeGen{models: []string{"m"}, steps: []*step{nil, {text: "ok"}}}
	p := serve(t, g)
	s := p.open(false, false)
	p.request(3, "session/prompt", promptParams(s, "long"))
	// Wait for the first chunk, then cancel.
	for f := range p.frames {
		if f["method"] == "session/update" {
			break
		}
	}
	p.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": s}})
	f, _ := p.until(3, noRequests(t))
	if f["result"].(map[string]any)["stopReason"] != "cancelled" {
		t.Fatalf("answer %v", f)
	}
	// A late cancel for a finished prompt is a no-op for the next one.
	p.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": s}})
	p.request(4, "session/prompt", promptParams(s, "next"))
	f, _ = p.until(4, noRequests(t))
	if f["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("answer %v", f)
	}
	h := g.history(1)
	if len(h) != 3 || h[1].Role != "assistant" || h[1].Content != "partial" {
		t.Errorf("history %+v", h)
	}
}

func TestToolBudgetAndTreeOrder(t *testing.T) {
	g := &fakeGen{models: []string{"m"}}
	for range MaxToolRounds + 2 {
		g.steps = append(g.steps, &step{calls: []ToolCall{call("read_file", `{"path":"/f"}`)}})
	}
	p := serve(t, g)
	s := p.open(true, false)
	p.request(3, "session/prompt", promptParams(s, "loop"))
	reads := 0
	f, up := p.until(3, func(m string, params map[string]any) any {
		reads++
		return map[string]any{"content": "x"}
	})
	if f["result"].(map[string]any)["stopReason"] != "end_turn" || reads != MaxToolRounds {
		t.Fatalf("answer %v after %d reads", f, reads)
	}
	// Every tool call is closed by its update before the prompt answers,
	// and the turn ends with the budget note and one usage_update.
	open := map[string]bool{}
	for _, u := range up {
		id, _ := u["toolCallId"].(string)
		switch u["sessionUpdate"] {
		case "tool_call":
			open[id] = true
		case "tool_call_update":
			delete(open, id)
		}
	}
	last := up[len(up)-1]
	if len(open) != 0 || last["sessionUpdate"] != "usage_update" || last["used"] != float64(12) || last["size"] != float64(4096) {
		t.Errorf("open calls %v, last update %v", open, last)
	}
	if !strings.Contains(fmt.Sprint(up[len(up)-2]), "tool loop budget exhausted") {
		t.Errorf("no budget note: %v", up[len(up)-2])
	}
}

func TestToolArgumentsMustFitTheSchema(t *testing.T) {
	g := &fakeGen{models: []string{"m"}, steps: []*step{
		{calls: []ToolCall{call("read_file", `{"path":7}`), call("read_file", `not json`), call("write_file", `{"path":"a","content":"b"}`), call("rm", `{}`)}},
		{text: "done"},
	}}
	p := serve(t, g)
	s := p.open(true, false)
	p.request(3, "session/prompt", promptParams(s, "x"))
	_, up := p.until(3, noRequests(t))
	var fails []string
	for _, u := range up {
		if u["sessionUpdate"] == "tool_call_update" {
			fails = append(fails, fmt.Sprint(u["status"], u["content"]))
		}
	}
	want := []string{"do not match the read_file parameters schema", "do not match the read_file parameters schema",
		"fs.writeTextFile is not advertised by the client", `there is no tool named \"rm\"`}
	if len(fails) != len(want) {
		t.Fatalf("updates %v", fails)
	}
	for i, w := range want {
		if !strings.HasPrefix(fails[i], "failed") || !strings.Contains(fails[i], w) {
			t.Errorf("call %d: %s, want failed with %s", i, fails[i], w)
		}
	}
	h := g.history(1)
	if n := len(h); n != 6 || h[2].Role != "tool" || h[5].Role != "tool" || !json.Valid([]byte(h[2].Content)) {
		t.Errorf("history %+v", h)
	}
}

func TestClientErrorFailsTheCallNotThePrompt(t *testing.T) {
	g := &fakeGen{models: []string{"m"}, steps: []*step{{calls: []ToolCall{call("read_file", `{"path":"/nope"}`)}}, {text: "sorry"}}}
	p := serve(t, g)
	s := p.open(true, false)
	p.request(3, "session/prompt", promptParams(s, "x"))
	f, _ := p.until(3, func(string, map[string]any) any { return errors.New("file not found") })
	if f["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatal(f)
	}
	if h := g.history(1); !strings.Contains(h[2].Content, "fs/read_text_file: file not found") {
		t.Errorf("tool result %q", h[2].Content)
	}
}
