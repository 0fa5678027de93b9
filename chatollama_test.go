package prism_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/engine/ollama/ollamatest"
)

// weatherTool is the tool the "weather" model calls.
var weatherTool = prism.Tool{Name: "get_weather", Description: "Current weather",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}

func user(text string) []prism.Message { return []prism.Message{prism.User(text)} }

func ollamaChat(t *testing.T) *prism.OllamaChat {
	t.Helper()
	fake := ollamatest.New(t,
		ollamatest.Model{Name: "tools:1b", Answer: ollamatest.Answer{PromptTokens: 12, CompletionTokens: 5, Chunks: []ollama.Chunk{
			{Thinking: "Paris, then."},
			{ToolCalls: []ollama.ToolCall{{Function: ollama.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}}},
		}}},
		ollamatest.Model{Name: "talk:1b", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{{Content: "<think>hm</th"}, {Content: "ink>Sure."}}}},
	)
	c, err := ollama.New(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	return prism.NewOllamaChat(c)
}

func TestOllamaChatToolCall(t *testing.T) {
	msg, err := prism.Complete(t.Context(), ollamaChat(t), "tools:1b", prism.ChatRequest{Messages: user("Weather?"),
		Tools: []prism.Tool{weatherTool}, ToolChoice: prism.ToolChoice{Mode: prism.ToolRequired}})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Arguments != `{"city":"Paris"}` || msg.Finish != prism.FinishToolCalls ||
		msg.Reasoning != "Paris, then." || msg.Usage.PromptTokens != 12 {
		t.Fatalf("%+v", msg)
	}
}

func TestOllamaChatRefusals(t *testing.T) {
	c := ollamaChat(t)
	cases := []struct {
		name  string
		req   prism.ChatRequest
		param string
	}{
		{"logprobs", prism.ChatRequest{Logprobs: true}, "logprobs"},
		{"effort", prism.ChatRequest{ReasoningEffort: "extreme"}, "reasoning_effort"},
		{"template variable", prism.ChatRequest{TemplateVars: map[string]any{"x": 1}}, "chat_template_kwargs"},
		{"arguments", prism.ChatRequest{Messages: []prism.Message{{Role: "assistant", ToolCalls: []prism.ToolCall{{ID: "a", Name: "f", Arguments: "[1]"}}}}},
			"messages[0].tool_calls[0].function.arguments"},
	}
	for _, tc := range cases {
		_, err := c.ChatStream(t.Context(), "talk:1b", tc.req)
		var re *prism.RequestError
		if !errors.As(err, &re) || re.Param != tc.param {
			t.Errorf("%s: %T %v", tc.name, err, err)
		}
	}
}

// A call tool_choice demands and Ollama did not make fails the answer.
func TestOllamaChatDemandedCallMissing(t *testing.T) {
	_, err := prism.Complete(t.Context(), ollamaChat(t), "talk:1b", prism.ChatRequest{Messages: user("Hi"),
		Tools: []prism.Tool{weatherTool}, ToolChoice: prism.CallTool("get_weather")})
	if err == nil {
		t.Fatal("no error")
	}
}

func TestOllamaChatThinkTags(t *testing.T) {
	msg, err := prism.Complete(t.Context(), ollamaChat(t), "talk:1b", prism.ChatRequest{Messages: user("Hi")})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Reasoning != "hm" || msg.Content != "Sure." || msg.Finish != prism.FinishStop {
		t.Fatalf("%+v", msg)
	}
}

// A scripted stream is what a fake ChatBackend returns: its events, an
// end, or its error.
func TestScriptedStream(t *testing.T) {
	msg, err := prism.ScriptedStream(nil, prism.Event{Kind: prism.EventReasoning, Text: "hm"}, prism.Event{Kind: prism.EventContent, Text: "ok"}).Collect()
	if err != nil || msg.Content != "ok" || msg.Reasoning != "hm" || !msg.HasReasoning || msg.Finish != prism.FinishStop {
		t.Fatalf("%+v, %v", msg, err)
	}
	gone := errors.New("backend gone")
	if _, err := prism.ScriptedStream(gone, prism.Event{Kind: prism.EventContent, Text: "o"}).Collect(); !errors.Is(err, gone) {
		t.Fatalf("err %v", err)
	}
}
