//go:build cgo

package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// cityTool is get_weather with a strict schema the scripted "tool" model's
// own answer ({"city": "Paris", ...}) does not satisfy: only the grammar
// can make its call valid.
func cityTool(strict bool) []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Strict: openai.Bool(strict),
		Parameters: shared.FunctionParameters{"type": "object", "additionalProperties": false, "required": []string{"city"},
			"properties": map[string]any{"city": map[string]any{"type": "string", "enum": []string{"Berlin", "Rome"}},
				"unit": map[string]any{"type": "string", "enum": []string{"celsius", "kelvin"}}}},
	})}
}

// checkCityCalls checks that the answer is exactly n calls of get_weather
// whose arguments the strict schema accepts.
func checkCityCalls(t *testing.T, resp *openai.ChatCompletion, n int) {
	t.Helper()
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != n {
		t.Fatalf("want %d calls: %s", n, resp.RawJSON())
	}
	for _, c := range ch.Message.ToolCalls {
		var args map[string]string
		dec := json.NewDecoder(strings.NewReader(c.Function.Arguments))
		if err := dec.Decode(&args); err != nil || c.Function.Name != "get_weather" || !slices.Contains([]string{"Berlin", "Rome"}, args["city"]) {
			t.Fatalf("call %s(%s): %v", c.Function.Name, c.Function.Arguments, err)
		}
		for k, v := range args {
			if k != "city" && (k != "unit" || !slices.Contains([]string{"celsius", "kelvin"}, v)) {
				t.Fatalf("arguments %s break the schema", c.Function.Arguments)
			}
		}
	}
}

// TestToolChoiceConstrained: tool calls through openai-go are constrained
// by the tools' schemas: tool_choice "required", a named tool and "auto"
// (a lazy grammar from the call's opening on), with parallel calls on and
// off, streamed and not; free text under "auto" is left alone.
func TestToolChoiceConstrained(t *testing.T) {
	ts := common(t)
	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	auto := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
	named := openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
	for _, c := range []struct {
		name     string
		choice   openai.ChatCompletionToolChoiceOptionUnionParam
		parallel bool
		strict   bool // the strict city schema the script breaks, else the loose one it follows
	}{
		// Parallel calls on: the script's one call, then EOS, which the grammar allows there.
		{"required", required, true, false},
		{"auto", auto, true, false},
		// The strict schema: the model leaves its script, so only one call is asked for.
		{"required strict", required, false, true},
		{"named strict", named, false, true},
		{"auto strict", auto, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			params := hello("tool")
			params.Tools = weatherTool()
			if c.strict {
				params.Tools = cityTool(true)
			}
			params.ToolChoice = c.choice
			params.ParallelToolCalls = openai.Bool(c.parallel)
			params.MaxCompletionTokens = openai.Int(120)
			resp, err := ts.client.Chat.Completions.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			if c.strict {
				checkCityCalls(t, resp, 1)
			} else if calls := resp.Choices[0].Message.ToolCalls; len(calls) != 1 || calls[0].Function.Arguments != `{"city": "Paris", "unit": "celsius"}` ||
				resp.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("answer %s", resp.RawJSON())
			}

			stream := ts.client.Chat.Completions.NewStreaming(t.Context(), params)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			got, want := acc.Choices[0].Message.ToolCalls, resp.Choices[0].Message.ToolCalls
			if len(got) != 1 || got[0].Function.Arguments != want[0].Function.Arguments || got[0].Function.Name != want[0].Function.Name ||
				acc.Choices[0].FinishReason != "tool_calls" {
				t.Errorf("streamed calls %+v (finish %q), non-streamed %+v", got, acc.Choices[0].FinishReason, want)
			}
		})
	}
	t.Run("auto leaves text alone", func(t *testing.T) {
		params := hello("think")
		params.Tools = cityTool(true)
		resp, err := ts.client.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		if m := resp.Choices[0].Message; strings.TrimSpace(m.Content) != "Hello there, friend." || len(m.ToolCalls) != 0 {
			t.Errorf("answer %s", resp.RawJSON())
		}
	})
}

// TestToolsWithResponseFormat: tools together with response_format under
// "auto": the answer is a call of an offered tool or a value under the
// schema.
func TestToolsWithResponseFormat(t *testing.T) {
	ts := common(t)
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"city", "temperature"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "temperature": map[string]any{"type": "integer"}}}
	format := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema, Strict: openai.Bool(true)}}}

	params := hello("json")
	params.Tools, params.ResponseFormat = cityTool(true), format
	resp, err := ts.client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		City        string `json:"city"`
		Temperature int    `json:"temperature"`
	}
	dec := json.NewDecoder(strings.NewReader(resp.Choices[0].Message.Content))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || got.City != "Paris" || len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("answer %s (%v)", resp.RawJSON(), err)
	}

	params = hello("tool")
	params.Tools, params.ResponseFormat = cityTool(true), format
	params.ParallelToolCalls = openai.Bool(false)
	params.MaxCompletionTokens = openai.Int(120)
	resp, err = ts.client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	checkCityCalls(t, resp, 1)
}

// TestToolSchemaErrors: a strict tool whose parameters use a keyword the
// grammar cannot enforce is a 400 naming the tool's parameters; without
// strict the call is served (the keyword is logged as not enforced).
func TestToolSchemaErrors(t *testing.T) {
	ts := common(t)
	tool := func(strict bool) string {
		return `{"type":"function","function":{"name":"f","strict":` + map[bool]string{true: "true", false: "false"}[strict] +
			`,"parameters":{"type":"object","properties":{"a":{"type":"number","not":{"multipleOf":2}}}}}}`
	}
	body := func(strict bool) string {
		return `{"model":"tool","messages":[{"role":"user","content":"hi"}],"max_tokens":60,"tools":[` + tool(strict) + `],"tool_choice":"required"}`
	}
	resp, out := post(t, ts, body(true), http.Header{})
	if code, param := errorOf(out); resp.StatusCode != 400 || code != "invalid_request_error" || param != "tools[0].function.parameters" {
		t.Errorf("strict: status %d, error %v", resp.StatusCode, out)
	}
	if resp, out := post(t, ts, body(false), http.Header{}); resp.StatusCode != 200 {
		t.Errorf("not strict: status %d, %v", resp.StatusCode, out)
	}
}
