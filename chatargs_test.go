package prism_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/internal/fixtures"
)

// referenceVector is one case of templates/testdata/reference/vectors.json:
// a conversation and what the reference renderer (@huggingface/jinja)
// made of it.
type referenceVector struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	Input  struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			Name       string          `json:"name"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []referenceCall `json:"tool_calls"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	} `json:"input"`
	Output string `json:"output"`
}

type referenceCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// A tool round trip whose arguments come back as a JSON string (the
// OpenAI wire form, compact as a client re-encodes them) renders as the
// reference renders the object they encode: Qwen3's template writes the
// object with tojson. DeepSeek-V3's template concatenates the arguments
// as text (the reference given the object writes "[object Map]", Prism's
// evaluator refuses a string plus a mapping), so they stay the string,
// rendered as the reference renders it.
func TestChatToolArgumentsAsObject(t *testing.T) {
	raw, err := os.ReadFile("templates/testdata/reference/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []referenceVector
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	chat := prism.NewEngineChat(nil, prism.NewModels(slog.New(slog.DiscardHandler)))
	for _, name := range []string{"qwen3/tool_round_trip", "deepseek_v3/tool_round_trip"} {
		t.Run(name, func(t *testing.T) {
			var v *referenceVector
			for i := range vectors {
				if vectors[i].Name == name {
					v = &vectors[i]
				}
			}
			if v == nil || v.Output == "" {
				t.Fatalf("no vector %s with an output", name)
			}
			req := prism.ChatRequest{}
			for _, tl := range v.Input.Tools {
				req.Tools = append(req.Tools, prism.Tool{JSON: tl})
			}
			for _, m := range v.Input.Messages {
				pm := prism.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
				var text string
				if string(m.Content) != "null" && json.Unmarshal(m.Content, &text) == nil {
					pm.Content = prism.Text(text)
				}
				for _, c := range m.ToolCalls {
					pm.ToolCalls = append(pm.ToolCalls, prism.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: wireArguments(t, c.Function.Arguments)})
				}
				req.Messages = append(req.Messages, pm)
			}
			prompt, fallback, err := chat.Render(t.Context(), fixtures.TokenizerDir(t, v.Family), req)
			if err != nil || fallback != nil {
				t.Fatalf("render: %v (fallback %v)", err, fallback)
			}
			if prompt != v.Output {
				t.Errorf("prompt\n%q\nwant the reference's\n%q", prompt, v.Output)
			}
		})
	}
}

// wireArguments is a call's arguments as a client sends them back: the
// string the vector has, or its object's JSON text, compact.
func wireArguments(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
