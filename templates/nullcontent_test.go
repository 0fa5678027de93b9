package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// toolRound is an agent's second step as OpenAI clients send it: the
// assistant's tool call with content null, then the tool's result.
func toolRound() []Message {
	return []Message{
		{Role: "user", Content: Text("Weather in Zürich?")},
		{Role: "assistant", Content: Null(), ToolCalls: []ToolCall{{ID: "c1", Type: "function",
			Function: FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"location":"Zürich"}`)}}}},
		{Role: "tool", ToolCallID: "c1", Content: Text(`{"sky":"clear"}`)},
	}
}

// TestRenderNullContentQwen3: the real Qwen3 template uses an assistant
// message's content as a string, so the null content beside a tool call
// fails it (as under Jinja). Render renders the request again with "" in
// its place, with tools and without, and the Prompt names the message;
// the prompt is exactly what the template makes of "", not the built-in
// format.
func TestRenderNullContentQwen3(t *testing.T) {
	src, err := ReadTokenizerConfig(tokenizerDir(t, "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tools := range [][]json.RawMessage{sampleTools()[:1], nil} {
		t.Run(map[bool]string{true: "tools", false: "no tools"}[tools != nil], func(t *testing.T) {
			var logs bytes.Buffer
			chat := NewChat("qwen/qwen3", *src, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			tpl := chat.pick(tools != nil).t
			in := Input{Messages: toolRound(), Tools: tools, AddGenerationPrompt: true}
			if _, err := tpl.render(t.Context(), in); err == nil {
				t.Fatal("the Qwen3 template renders a null content: this test no longer shows the retry")
			}
			p, err := chat.Render(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			asEmpty := in
			asEmpty.Messages = toolRound()
			asEmpty.Messages[1].Content = Text("")
			want, err := tpl.render(t.Context(), asEmpty)
			if err != nil {
				t.Fatal(err)
			}
			if p.Text != want || p.Fallback || !slices.Equal(p.NullAsEmpty, []int{1}) {
				t.Errorf("got fallback=%v NullAsEmpty=%v, text equal to the render with \"\": %v", p.Fallback, p.NullAsEmpty, p.Text == want)
			}
			if !in.Messages[1].Content.IsNull() {
				t.Error("Render changed the caller's messages")
			}
			if log := logs.String(); !strings.Contains(log, "null message content") || !strings.Contains(log, "model=qwen/qwen3") ||
				!strings.Contains(log, "messages=[1]") || strings.Contains(log, `msg="chat template failed"`) {
				t.Errorf("log:\n%s", log)
			}
		})
	}
}

// TestRenderNullContentOtherwise: a template that renders null content
// is never retried; one that fails with "" too keeps its first failure
// (fallback without tools, a *TemplateRenderError with them); a sandbox
// stop is not retried.
func TestRenderNullContentOtherwise(t *testing.T) {
	renders := `{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}`
	failsOnNull := `{% for m in messages %}{{ m.content.strip() }}{% endfor %}`
	raises := `{% if messages[1].content is none %}{{ raise_exception('null content') }}{% endif %}{{ raise_exception('empty content') }}`
	stopped := `{% if messages[1].content is none %}{{ range(-9223372036854775807, 9223372036854775807) | length }}{% endif %}ok`
	tools := sampleTools()[:1]
	tests := []struct {
		name, src string
		tools     []json.RawMessage
		nulls     []int
		fallback  bool
		cause     string // the error's or FallbackCause's text, "" for none
	}{
		{"renders null", renders, tools, nil, false, ""},
		{"fails on null", failsOnNull, tools, []int{1}, false, ""},
		{"fails with both, tools", raises, tools, nil, false, "null content"},
		{"fails with both, no tools", raises, nil, nil, true, "null content"},
		{"stopped by the sandbox", stopped, tools, nil, false, "range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := NewChat("m", ChatTemplates{Named: map[string]string{"default": tt.src}}, WithLogger(slog.New(slog.DiscardHandler)))
			p, err := chat.Render(t.Context(), Input{Messages: toolRound(), Tools: tt.tools})
			if !slices.Equal(p.NullAsEmpty, tt.nulls) || p.Fallback != tt.fallback {
				t.Fatalf("NullAsEmpty %v fallback %v (err %v), want %v %v", p.NullAsEmpty, p.Fallback, err, tt.nulls, tt.fallback)
			}
			switch {
			case tt.cause == "":
				if err != nil {
					t.Fatal(err)
				}
			case tt.fallback:
				if err != nil || p.FallbackCause == nil || !strings.Contains(p.FallbackCause.Error(), tt.cause) {
					t.Fatalf("fallback cause %v (err %v), want the first failure %q", p.FallbackCause, err, tt.cause)
				}
			default:
				var tre *TemplateRenderError
				if !errors.As(err, &tre) || !strings.Contains(err.Error(), tt.cause) {
					t.Fatalf("err %v, want a TemplateRenderError with the first failure %q", err, tt.cause)
				}
			}
			if tt.name == "renders null" && p.Text != "[user:Weather in Zürich?][assistant:None][tool:{\"sky\":\"clear\"}]" {
				t.Errorf("text %q", p.Text)
			}
		})
	}
}
