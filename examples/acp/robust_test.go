package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/testproc"
)

// alive checks the agent still answers.
func alive(t *testing.T, c *client) {
	t.Helper()
	if f := c.call("initialize", map[string]any{"protocolVersion": 1}); f.Error != nil {
		t.Fatalf("initialize after the bad input: %+v", f.Error)
	}
}

func TestMalformedFramesAreDropped(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t))
	for _, line := range []string{
		`not json at all`,
		`{"jsonrpc":"2.0","id":77,"method":"initialize"`, // truncated
		`[{"jsonrpc":"2.0","id":78,"method":"initialize"}]`,
		`"a string"`,
		`{"jsonrpc":"2.0","id":79,"method":"initialize","params":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`,
		strings.Repeat("{\"a\":", 50000) + "1" + strings.Repeat("}", 50000),
		"\x00\xff\xfe",
	} {
		c.line(line)
	}
	alive(t, c)
	if !strings.Contains(c.p.Stderr(), "dropped a malformed frame") {
		t.Errorf("no drop notice on stderr:\n%s", c.p.Stderr())
	}
}

func TestNonObjectParamsAreInvalidParams(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t))
	id := 100
	for _, method := range []string{"initialize", "session/new", "session/prompt", "session/set_config_option"} {
		for _, params := range []string{`[]`, `"x"`, `7`, `true`} {
			id++
			f := c.rawCall(id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
			if f.Error == nil || f.Error.Code != -32602 {
				t.Errorf("%s with params %s: %+v, want -32602", method, params, f.Error)
			}
		}
	}
	// A notification with bad params gets no answer and breaks nothing.
	c.line(`{"jsonrpc":"2.0","method":"session/cancel","params":[1]}`)
	c.line(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":7}}`)
	alive(t, c)
}

func TestShapeErrorsAreInvalidParams(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL=think"))
	s := c.handshake("", false, false)
	for name, params := range map[string]any{
		"session id not a string": map[string]any{"sessionId": 7, "prompt": []any{}},
		"unknown session":         map[string]any{"sessionId": "nope", "prompt": []any{}},
		"prompt not an array":     map[string]any{"sessionId": s, "prompt": "hi"},
		"block not an object":     map[string]any{"sessionId": s, "prompt": []any{"hi"}},
		"image block":             map[string]any{"sessionId": s, "prompt": []any{map[string]any{"type": "image", "data": "", "mimeType": "image/png"}}},
		"text without text":       map[string]any{"sessionId": s, "prompt": []any{map[string]any{"type": "text"}}},
	} {
		f := c.call("session/prompt", params)
		if f.Error == nil || f.Error.Code != -32602 {
			t.Errorf("%s: %+v, want -32602", name, f.Error)
		}
		if name == "image block" && !strings.Contains(f.Error.Message, `"image"`) {
			t.Errorf("image block: %q does not name the type", f.Error.Message)
		}
	}
	if f := c.call("session/new", map[string]any{"cwd": 7}); f.Error == nil || f.Error.Code != -32602 {
		t.Errorf("cwd not a string: %+v", f.Error)
	}
}

func TestUnknownMethods(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t))
	for _, m := range []string{"session/load", "fs/read_text_file", "terminal/create", "authenticate", "x"} {
		f := c.call(m, map[string]any{})
		if f.Error == nil || f.Error.Code != -32601 {
			t.Errorf("%s: %+v, want -32601", m, f.Error)
		}
	}
	c.line(`{"jsonrpc":"2.0","method":"no/such/notification","params":{}}`)
	alive(t, c) // the notification got no answer: the next answer is initialize's
}

func TestInitializeVersionNegotiation(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t))
	for _, v := range []string{`1`, `2`, `99`, `0`, `-1`, `1.5`, `true`, `false`, `"1"`, `null`, `{}`, `1e0`} {
		f := c.call("initialize", map[string]any{"protocolVersion": json.RawMessage(v)})
		var r struct {
			ProtocolVersion json.RawMessage `json:"protocolVersion"`
		}
		_ = json.Unmarshal(f.Result, &r)
		if f.Error != nil || string(r.ProtocolVersion) != "1" {
			t.Errorf("protocolVersion %s: answered %s (%+v), want 1", v, r.ProtocolVersion, f.Error)
		}
	}
	f := c.call("initialize", map[string]any{})
	if f.Error != nil || !strings.Contains(string(f.Result), `"protocolVersion":1`) || !strings.Contains(string(f.Result), `"loadSession":false`) {
		t.Errorf("absent version: %s %+v", f.Result, f.Error)
	}
}

func TestToolsFollowCapabilities(t *testing.T) {
	t.Parallel()
	// Without fs capabilities the reader model's call is refused by the
	// agent (nothing offered), and no fs request reaches the client.
	c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL=reader"))
	s := c.handshake("", false, false)
	c.serve = func(method string, _ json.RawMessage) (any, *rpcError) {
		t.Errorf("the agent sent %s to a client without fs capabilities", method)
		return nil, &rpcError{Code: -32601, Message: method}
	}
	if got := stopReason(t, c.call("session/prompt", prompt(s, "read it"))); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	up := c.takeUpdates()
	var failedCalls, rounds int
	for _, u := range up {
		if u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed" {
			failedCalls++
			if !strings.Contains(fmt.Sprint(u["content"]), "fs.readTextFile is not advertised") {
				t.Errorf("failure %v", u["content"])
			}
		}
		if u["sessionUpdate"] == "tool_call" {
			rounds++
		}
	}
	// The scripted model calls again every round: the budget ends the turn.
	if rounds != 8 || failedCalls != 8 || !strings.Contains(text(up, "agent_message_chunk"), "tool loop budget exhausted") {
		t.Errorf("%d calls, %d failed, text %q; want 8 rounds and the budget note", rounds, failedCalls, text(up, "agent_message_chunk"))
	}
}

func TestClosedStdoutIsNotACrash(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(agent.Path(t))
	cmd.Env = agentEnv(t, "PRISM_ACP_MODEL=think")
	p := testproc.Start(t, cmd, testproc.Stdio())
	_ = p.Stdout().Close() // the editor closed its end
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"nope"}`,
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":[]}`,
	}
	for _, l := range lines {
		_, _ = io.WriteString(p.Stdin(), l+"\n")
	}
	time.Sleep(200 * time.Millisecond) // let the writes fail; the exit status is what is checked
	_ = p.Stdin().Close()
	if err := p.Wait(30 * time.Second); errors.Is(err, testproc.ErrRunning) {
		t.Fatal("agent did not exit at the end of its input")
	} else if err != nil {
		t.Fatalf("agent exited with %v after its stdout closed; stderr:\n%s", err, p.Stderr())
	}
	if !strings.Contains(p.Stderr(), "output closed") {
		t.Errorf("no notice of the closed output:\n%s", p.Stderr())
	}
}

func TestConnectionDropFailsPendingRequest(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL=writer"))
	s := c.handshake("", true, true)
	asked := make(chan struct{})
	c.serve = func(method string, params json.RawMessage) (any, *rpcError) {
		close(asked)
		select {} // never answers
	}
	c.start("session/prompt", prompt(s, "Write out.txt"))
	<-asked
	_ = c.stdin.Close() // the client goes away with the permission request pending
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not exit when its input closed")
	}
	if err := c.exit(); err != nil {
		t.Fatalf("exit: %v\n%s", err, c.p.Stderr())
	}
	if !strings.Contains(c.p.Stderr(), "the connection closed before the client replied") && !strings.Contains(c.p.Stderr(), "cancelled") {
		t.Errorf("the pending request's failure is not reported:\n%s", c.p.Stderr())
	}
}
