package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/prism-local/prism/internal/app/jsonrpc"
	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/tools"
)

// The model's tools: OpenAI function definitions.
var (
	readFileTool  = json.RawMessage(`{"type":"function","function":{"name":"read_file","strict":true,"description":"Read a text file from the user's workspace, through the editor.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"Absolute path, or relative to the session's working directory"},"line":{"type":"integer","minimum":1,"description":"First line to read, 1-based"},"limit":{"type":"integer","minimum":1,"description":"Most lines to read"}},"required":["path"],"additionalProperties":false}}}`)
	writeFileTool = json.RawMessage(`{"type":"function","function":{"name":"write_file","strict":true,"description":"Write a text file in the user's workspace, through the editor, after the user allows it.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"Absolute path, or relative to the session's working directory"},"content":{"type":"string","description":"The file's whole new text"}},"required":["path","content"],"additionalProperties":false}}}`)
)

// tools are the tools the client's capabilities allow (spec Phase 13).
func (a *agent) tools() []json.RawMessage {
	c := a.capabilities()
	var out []json.RawMessage
	if c.readTextFile {
		out = append(out, readFileTool)
	}
	if c.writeTextFile {
		out = append(out, writeFileTool)
	}
	return out
}

// toolResult is what one call produced for the model.
type toolResult struct {
	text      string // fed back to the model
	failed    bool
	cancelled bool
}

func failed(format string, args ...any) toolResult {
	return toolResult{text: fmt.Sprintf(format, args...), failed: true}
}

// failure is a failed call whose result is {"error": message}.
func failure(format string, args ...any) toolResult {
	b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	return toolResult{text: string(b), failed: true}
}

// runTool executes one call as a child of the prompt's tree: tool_call,
// the client round trips, tool_call_update, then its outcome and its
// delivery to the prompt are recorded.
func (a *agent) runTool(ctx context.Context, s *session, root string, call ToolCall, offered []json.RawMessage) (string, bool) {
	id := fmt.Sprintf("call_%s_%04d", s.id, s.nextCallID())
	bg := context.Background()
	if _, err := a.tree.Child(bg, id, root, executor, signals.Kind("tool_call")); err != nil {
		a.log.Error("registering a tool call", "id", id, "err", err)
	}
	var args map[string]any
	_ = json.Unmarshal([]byte(call.Function.Arguments), &args)
	path, _ := args["path"].(string)
	if path != "" && !filepath.IsAbs(path) && s.cwd != "" {
		path = filepath.Join(s.cwd, path) // a string operation: nothing is opened
	}
	kind, title := "other", call.Function.Name
	switch call.Function.Name {
	case "read_file":
		kind, title = "read", "Read "+path
	case "write_file":
		kind, title = "edit", "Write "+path
	}
	start := toolCallUpdate{SessionUpdate: "tool_call", ToolCallID: id, Title: title, Kind: kind, Status: "in_progress"}
	if json.Valid([]byte(call.Function.Arguments)) {
		start.RawInput = json.RawMessage(call.Function.Arguments)
	}
	if path != "" {
		start.Locations = []location{{Path: path}}
	}
	a.update(s.id, start)
	res := a.execute(ctx, s, id, title, call, offered, args, path)
	status, rec := "completed", signals.Outcome{State: signals.Succeeded}
	switch {
	case res.cancelled:
		status, rec = "failed", signals.Outcome{State: signals.Canceled, Detail: res.text}
	case res.failed:
		status, rec = "failed", signals.Outcome{State: signals.Failed, Detail: res.text}
	}
	if res.failed || res.cancelled {
		a.log.Warn("acp tool call failed", "session", s.id, "id", id, "tool", clip(call.Function.Name), "cancelled", res.cancelled, "detail", clip(res.text))
	}
	a.update(s.id, toolCallUpdate{SessionUpdate: "tool_call_update", ToolCallID: id, Status: status,
		Content: []toolCallContent{{Type: "content", Content: textBlock(res.text)}}})
	if _, err := a.tree.Record(bg, id, executor, rec); err != nil {
		a.log.Error("recording a tool call's outcome", "id", id, "err", err)
	}
	// The result reaches the prompt (its parent) as the tool message the
	// caller appends next.
	if _, err := a.tree.Notified(bg, id); err != nil {
		a.log.Error("recording a tool call's delivery", "id", id, "err", err)
	}
	return res.text, res.cancelled
}

func (a *agent) execute(ctx context.Context, s *session, id, title string, call ToolCall, offered []json.RawMessage, args map[string]any, path string) toolResult {
	def := findTool(offered, call.Function.Name)
	if def == nil {
		switch call.Function.Name {
		case "read_file":
			return failure("fs.readTextFile is not advertised by the client")
		case "write_file":
			return failure("fs.writeTextFile is not advertised by the client")
		}
		return failure("there is no tool named %q", clip(call.Function.Name))
	}
	// The constraint the grammar would enforce, checked: the arguments must
	// be a complete value of the tool's schema.
	schema, err := tools.ToolSchema(def)
	if err != nil {
		return failure("the %s schema does not compile: %v", call.Function.Name, err)
	}
	if args == nil || schema.Check(call.Function.Arguments) != tools.Complete {
		return failure("the arguments %s do not match the %s parameters schema", clip(call.Function.Arguments), call.Function.Name)
	}
	if ctx.Err() != nil {
		return toolResult{text: "cancelled by the user", cancelled: true}
	}
	switch call.Function.Name {
	case "read_file":
		return a.readFile(ctx, s, args, path)
	default:
		return a.writeFile(ctx, s, id, title, args, path)
	}
}

func findTool(offered []json.RawMessage, name string) json.RawMessage {
	for _, t := range offered {
		if n, err := tools.ToolName(t); err == nil && n == name {
			return t
		}
	}
	return nil
}

// clientFailure turns a failed client round trip into a tool result.
func clientFailure(ctx context.Context, method string, err error) toolResult {
	if errors.Is(err, jsonrpc.ErrClosed) {
		return failure("%s", err.Error())
	}
	if ctx.Err() != nil {
		return toolResult{text: "cancelled by the user", cancelled: true}
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return failure("%s: %s", method, rpc.Message)
	}
	return failure("%s", err.Error())
}

func (a *agent) readFile(ctx context.Context, s *session, args map[string]any, path string) toolResult {
	params := map[string]any{"sessionId": s.id, "path": path}
	for _, k := range []string{"line", "limit"} {
		if v, ok := args[k]; ok {
			params[k] = v
		}
	}
	raw, err := a.conn.Call(ctx, "fs/read_text_file", params)
	if err != nil {
		return clientFailure(ctx, "fs/read_text_file", err)
	}
	var r struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Content == nil {
		return failure("fs/read_text_file answered without a content string")
	}
	return toolResult{text: *r.Content}
}

func (a *agent) writeFile(ctx context.Context, s *session, id, title string, args map[string]any, path string) toolResult {
	content, _ := args["content"].(string)
	raw, err := a.conn.Call(ctx, "session/request_permission", permissionParams{SessionID: s.id,
		ToolCall: toolCallUpdate{ToolCallID: id, Title: title, Kind: "edit", Status: "pending", Locations: []location{{Path: path}}},
		Options: []permissionOption{{OptionID: "allow_once", Name: "Allow once", Kind: "allow_once"},
			{OptionID: "reject_once", Name: "Reject", Kind: "reject_once"}}})
	if err != nil {
		return clientFailure(ctx, "session/request_permission", err)
	}
	var p permissionResult
	if json.Unmarshal(raw, &p) != nil || p.Outcome == nil {
		return failure("session/request_permission answered without an outcome")
	}
	switch {
	case p.Outcome.Outcome == "cancelled":
		return toolResult{text: "cancelled by the user", cancelled: true}
	case p.Outcome.Outcome == "selected" && p.Outcome.OptionID == "reject_once":
		return failed("permission denied: the user rejected writing %s", path)
	case p.Outcome.Outcome == "selected" && p.Outcome.OptionID == "allow_once":
	default:
		return failure("session/request_permission answered with an unknown outcome")
	}
	if ctx.Err() != nil {
		return toolResult{text: "cancelled by the user", cancelled: true}
	}
	if _, err := a.conn.Call(ctx, "fs/write_text_file", map[string]any{"sessionId": s.id, "path": path, "content": content}); err != nil {
		return clientFailure(ctx, "fs/write_text_file", err)
	}
	return toolResult{text: fmt.Sprintf("wrote %d bytes to %s", len(content), path)}
}

// ToolDefinitions returns the definitions of every tool the agent can
// offer, in the order it offers them.
func ToolDefinitions() []json.RawMessage {
	return []json.RawMessage{readFileTool, writeFileTool}
}
