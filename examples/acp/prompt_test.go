package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPromptStreamsThoughtsAndAnswer(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL=think"))
	s := c.handshake("", false, false)
	if got := stopReason(t, c.call("session/prompt", prompt(s, "Hi!"))); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	up := c.takeUpdates()
	if got := text(up, "agent_thought_chunk"); strings.TrimSpace(got) != "The user greets me." {
		t.Errorf("thoughts %q", got)
	}
	if got := text(up, "agent_message_chunk"); strings.TrimSpace(got) != "Hello from Prism!" {
		t.Errorf("answer %q", got)
	}
	last := up[len(up)-1]
	if last["sessionUpdate"] != "usage_update" || last["used"].(float64) <= 0 || last["size"].(float64) != 2048 {
		t.Errorf("last update %v, want a usage_update with tokens and the 2048 window", last)
	}
}

func TestReadToolRoundTrip(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL=reader"))
	var reads []string
	c.serve = func(method string, params json.RawMessage) (any, *rpcError) {
		var p struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(params, &p)
		if method != "fs/read_text_file" {
			return nil, &rpcError{Code: -32601, Message: method}
		}
		reads = append(reads, p.Path)
		return map[string]any{"content": fileText}, nil
	}
	s := c.handshake("", true, false)
	if got := stopReason(t, c.call("session/prompt", prompt(s, "What is in notes.txt?"))); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	up := c.takeUpdates()
	if len(reads) != 1 || reads[0] != workspace+"/notes.txt" {
		t.Errorf("reads %q", reads)
	}
	if got := text(up, "agent_message_chunk"); strings.TrimSpace(got) != readAnswer {
		t.Errorf("answer %q", got)
	}
	var kinds []string
	for _, u := range up {
		kinds = append(kinds, u["sessionUpdate"].(string))
		if u["sessionUpdate"] == "tool_call" && (u["kind"] != "read" || u["status"] != "in_progress") {
			t.Errorf("tool_call %v", u)
		}
		if u["sessionUpdate"] == "tool_call_update" && u["status"] != "completed" {
			t.Errorf("tool_call_update %v", u)
		}
	}
	if j := strings.Join(kinds, ","); !strings.HasPrefix(j, "tool_call,tool_call_update,agent_message_chunk") {
		t.Errorf("updates %s", j)
	}
}

// writeServer answers the write tool's requests, choosing option at the
// permission request ("" for the cancelled outcome, after cancelling).
func writeServer(c *client, session, option string, permissions *int) func(string, json.RawMessage) (any, *rpcError) {
	return func(method string, params json.RawMessage) (any, *rpcError) {
		switch method {
		case "session/request_permission":
			*permissions++
			if option == "" {
				c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": session}})
				return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
			}
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": option}}, nil
		case "fs/write_text_file":
			var p struct{ Path, Content string }
			_ = json.Unmarshal(params, &p)
			c.mu.Lock()
			c.wrote[p.Path] = p.Content
			c.mu.Unlock()
			return map[string]any{}, nil
		}
		return nil, &rpcError{Code: -32601, Message: method}
	}
}

func TestWriteToolPermission(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, model, option, stop, answer, status string
		written                                   bool
	}{
		{"allowed", "writer", "allow_once", "end_turn", writeAnswer, "completed", true},
		{"rejected", "rejected", "reject_once", "end_turn", rejectReply, "failed", false},
		{"cancelled", "writer", "", "cancelled", "", "failed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL="+tc.model))
			s := c.handshake("", true, true)
			permissions := 0
			c.serve = writeServer(c, s, tc.option, &permissions)
			if got := stopReason(t, c.call("session/prompt", prompt(s, "Write out.txt"))); got != tc.stop {
				t.Fatalf("stopReason %q, want %q", got, tc.stop)
			}
			up := c.takeUpdates()
			if permissions != 1 {
				t.Errorf("%d permission requests, want 1", permissions)
			}
			if got, ok := c.written(workspace + "/out.txt"); ok != tc.written || ok && got != newText {
				t.Errorf("wrote %q (%v), want written=%v", got, ok, tc.written)
			}
			if got := text(up, "agent_message_chunk"); strings.TrimSpace(got) != tc.answer {
				t.Errorf("answer %q, want %q", got, tc.answer)
			}
			for _, u := range up {
				if u["sessionUpdate"] == "tool_call_update" && u["status"] != tc.status {
					t.Errorf("tool_call_update %v, want status %s", u, tc.status)
				}
			}
		})
	}
}

func TestOnePromptPerSessionAndCancel(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL=writer"))
	s := c.handshake("", true, true)
	asked := make(chan struct{})
	release := make(chan struct{})
	c.serve = func(method string, params json.RawMessage) (any, *rpcError) {
		close(asked)
		<-release
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}, nil
	}
	first := c.start("session/prompt", prompt(s, "Write out.txt"))
	<-asked // the first prompt waits on the client
	f := c.call("session/prompt", prompt(s, "again"))
	if f.Error == nil || f.Error.Code != -32602 || !strings.Contains(f.Error.Message, "already in progress") {
		t.Fatalf("second prompt: %+v", f.Error)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": s}})
	if got := stopReason(t, c.wait(first)); got != "cancelled" {
		t.Fatalf("stopReason %q", got)
	}
	close(release)
	if _, ok := c.written(workspace + "/out.txt"); ok {
		t.Error("a cancelled prompt wrote the file")
	}
}

func TestPromptErrorIsServerErrorNamingTheCause(t *testing.T) {
	t.Parallel()
	c := startAgent(t, agentEnv(t, "PRISM_ACP_MODEL=no-such-model"))
	s := c.handshake("", false, false)
	f := c.call("session/prompt", prompt(s, "Hi"))
	if f.Error == nil || f.Error.Code != -32000 || !strings.Contains(f.Error.Message, "model_not_found") {
		t.Fatalf("error %+v, want -32000 naming model_not_found", f.Error)
	}
	// The session is still usable once a model that exists is chosen.
	if f := c.call("session/set_config_option", map[string]any{"sessionId": s, "configId": "model", "value": "nope"}); f.Error == nil || f.Error.Code != -32602 {
		t.Fatalf("a model the session does not offer: %+v", f.Error)
	}
	if f := c.call("session/set_config_option", map[string]any{"sessionId": s, "configId": "model", "value": "think"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if got := stopReason(t, c.call("session/prompt", prompt(s, "Hi"))); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
}

func TestGeneratesThroughTheReferenceServer(t *testing.T) {
	t.Parallel()
	base := referenceServer(t)
	c := startAgent(t, agentEnv(t, "PRISM_BASE_URL="+base, "PRISM_ACP_MODEL=reader"))
	c.serve = func(method string, _ json.RawMessage) (any, *rpcError) {
		return map[string]any{"content": fileText}, nil
	}
	s := c.handshake("", true, false)
	if got := stopReason(t, c.call("session/prompt", prompt(s, "read"))); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	if got := text(c.takeUpdates(), "agent_message_chunk"); strings.TrimSpace(got) != readAnswer {
		t.Errorf("answer %q", got)
	}
	if log := c.p.Stderr(); strings.Contains(log, "unreachable") || strings.Contains(log, "model loaded") {
		t.Errorf("the agent did not use the reference server:\n%s", log)
	}
}
