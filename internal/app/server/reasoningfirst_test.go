//go:build cgo

package server_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
)

// A template that opens the think block in its generation prompt, as
// DeepSeek-R1's and Qwen3's thinking-only models do, with Hermes tools.
const openThinkTemplate = `{%- if tools -%}<|im_start|>system
Call a tool as <tool_call>{"name": ..., "arguments": ...}</tool_call>: {{ tools | tojson }}<|im_end|>
{% endif -%}
{%- for m in messages -%}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant
<think>
{% endif -%}`

// reasoningServer serves scripted models that reason before a JSON
// answer: with the real Qwen3 template (the model opens the block
// itself), with a template that opens it in the prompt, and in harmony
// (an analysis message, then the final channel).
func reasoningServer(t *testing.T) *testServer {
	t.Helper()
	root := reasoningModels.path(t, func(t *testing.T, root string) { writeReasoningModels(t, root) })
	cat, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	return start(t, nil, func(c *server.Config) { c.Catalog = cat })
}

// reasoningModels are written once for the tests that share them: writing
// six models over 150,000- and 200,000-token vocabularies is most of these
// tests' time under -race.
var reasoningModels sharedFolder

func writeReasoningModels(t *testing.T, root string) {
	const thought = "The user wants the weather as JSON."
	models := []scriptedModel{
		{"q-think", fixtures.TokenizerDir(t, "qwen3"), "<think>\n" + thought + "\n</think>\n\n" + jsonAnswer, nil},
		{"q-open", withTemplate(t, "qwen3", openThinkTemplate), thought + "\n</think>\n\n" + jsonAnswer, nil},
		{"q-think-call", fixtures.TokenizerDir(t, "qwen3"), "<think>\n" + thought + "\n</think>\n\n" + toolAnswer, nil},
		{"q-open-call", withTemplate(t, "qwen3", openThinkTemplate), thought + "\n</think>\n\n" + toolAnswer, nil},
		{"hm-think-call", withTemplate(t, "gptoss", harmonyTemplate), "<|channel|>analysis<|message|>" + thought +
			"<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" +
			`{"city": "Paris", "unit": "celsius"}`, []string{"<|call|>", "<|return|>"}},
		{"hm-think", withTemplate(t, "gptoss", harmonyTemplate), "<|channel|>analysis<|message|>" + thought +
			"<|end|><|start|>assistant<|channel|>final<|message|>" + jsonAnswer, []string{"<|return|>", "<|call|>"}},
	}
	writeScriptedTo(t, root, raceModels(models, "q-think", "q-think-call"))
}

// TestReasoningBeforeFormat: under response_format (a schema or JSON
// mode) a reasoning model still thinks first — whether it opens the think
// block itself, the prompt opens it, or it writes a harmony analysis
// message — and the answer after it is the value, with the reasoning in
// reasoning_content. Without response_format the harmony answer is split
// the same way.
func TestReasoningBeforeFormat(t *testing.T) {
	ts := reasoningServer(t)
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"city", "temperature"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "temperature": map[string]any{"type": "integer"}}}
	formats := map[string]openai.ChatCompletionNewParamsResponseFormatUnion{
		"json_schema": {OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema, Strict: openai.Bool(true)}}},
		"json_object": {OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
		"none":        {},
	}
	for _, model := range raceShort([]string{"q-think", "q-open", "hm-think"}) {
		for name, format := range formats {
			if name == "none" && model != "hm-think" {
				continue
			}
			t.Run(model+"/"+name, func(t *testing.T) {
				params := hello(model)
				params.ResponseFormat, params.MaxCompletionTokens = format, openai.Int(120)
				resp, err := ts.client.Chat.Completions.New(t.Context(), params)
				if err != nil {
					t.Fatal(err)
				}
				msg := resp.Choices[0].Message
				reasoning := extra(msg.RawJSON(), "reasoning_content")
				if strings.TrimSpace(msg.Content) != jsonAnswer || strings.TrimSpace(reasoning) != "The user wants the weather as JSON." ||
					resp.Choices[0].FinishReason != "stop" {
					t.Errorf("answer %s", resp.RawJSON())
				}
				// Streamed: the same split.
				st := ts.client.Chat.Completions.NewStreaming(t.Context(), params)
				var content, thinking strings.Builder
				for st.Next() {
					c := st.Current()
					if len(c.Choices) > 0 {
						content.WriteString(c.Choices[0].Delta.Content)
						thinking.WriteString(extra(c.Choices[0].Delta.RawJSON(), "reasoning_content"))
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				if content.String() != msg.Content || thinking.String() != reasoning {
					t.Errorf("streamed content %q reasoning %q, not streamed %q %q", content.String(), thinking.String(), msg.Content, reasoning)
				}
			})
		}
	}
}

// TestReasoningBeforeDemandedCall: under tool_choice "required" or a named
// tool a reasoning model thinks first — whether it opens the block itself,
// the prompt opens it, or it writes a harmony analysis message — and then
// makes the call, constrained by the tool's schema; the reasoning arrives
// in reasoning_content. With tools and a response format under "auto", a
// harmony model analyses first too, then answers with the value.
func TestReasoningBeforeDemandedCall(t *testing.T) {
	ts := reasoningServer(t)
	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	named := openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
	for _, model := range raceShort([]string{"q-think-call", "q-open-call", "hm-think-call"}) {
		for name, choice := range map[string]openai.ChatCompletionToolChoiceOptionUnionParam{"required": required, "named": named} {
			t.Run(model+"/"+name, func(t *testing.T) {
				params := hello(model)
				params.Tools, params.ToolChoice, params.MaxCompletionTokens = weatherTool(), choice, openai.Int(120)
				resp, err := ts.client.Chat.Completions.New(t.Context(), params)
				if err != nil {
					t.Fatal(err)
				}
				msg := resp.Choices[0].Message
				if strings.TrimSpace(extra(msg.RawJSON(), "reasoning_content")) != "The user wants the weather as JSON." ||
					len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" ||
					msg.ToolCalls[0].Function.Arguments != `{"city": "Paris", "unit": "celsius"}` ||
					strings.TrimSpace(msg.Content) != "" || resp.Choices[0].FinishReason != "tool_calls" {
					t.Errorf("answer %s", resp.RawJSON())
				}
			})
		}
	}
	t.Run("hm-think/auto with response_format", func(t *testing.T) {
		if raceEnabled {
			t.Skip("one family under -race (raceShort); make test runs it without")
		}
		params := hello("hm-think")
		params.Tools, params.MaxCompletionTokens = weatherTool(), openai.Int(120)
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
		resp, err := ts.client.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		msg := resp.Choices[0].Message
		if strings.TrimSpace(extra(msg.RawJSON(), "reasoning_content")) != "The user wants the weather as JSON." ||
			strings.TrimSpace(msg.Content) != jsonAnswer || len(msg.ToolCalls) != 0 {
			t.Errorf("answer %s", resp.RawJSON())
		}
	})
}
