//go:build cgo

package server_test

// The official openai-go Responses client against the server on the
// scripted models of server_test.go.

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism/internal/fixtures"
)

func sayHi(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi!")}}
}

// streamed is what a Responses stream delivered, as a client joins it.
type streamed struct {
	types                 []string // event types, a run of equal deltas as one
	text, thinking, args  strings.Builder
	argsDone, thoughtDone string
	final                 responses.Response
	last                  string
}

func readStream(t *testing.T, ts *testServer, params responses.ResponseNewParams) *streamed {
	t.Helper()
	stream := ts.client.Responses.NewStreaming(t.Context(), params)
	var s streamed
	var seq int64
	for stream.Next() {
		e := stream.Current()
		if e.SequenceNumber != seq {
			t.Errorf("event %s has sequence number %d, want %d", e.Type, e.SequenceNumber, seq)
		}
		seq++
		if n := len(s.types); n == 0 || s.types[n-1] != e.Type || !strings.HasSuffix(e.Type, ".delta") {
			s.types = append(s.types, e.Type)
		}
		switch e.Type {
		case "response.output_text.delta":
			s.text.WriteString(e.Delta)
		case "response.reasoning_text.delta":
			s.thinking.WriteString(e.Delta)
		case "response.reasoning_text.done":
			s.thoughtDone = e.AsResponseReasoningTextDone().Text
		case "response.function_call_arguments.delta":
			s.args.WriteString(e.Delta)
		case "response.function_call_arguments.done":
			s.argsDone = e.Arguments
		case "response.completed", "response.incomplete":
			s.final = e.Response
		}
		s.last = e.Type
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestResponsesStreamedAndNot(t *testing.T) {
	ts := common(t)
	resp, err := ts.client.Responses.New(t.Context(), sayHi("think"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != "completed" || len(resp.Output) != 2 || resp.Output[0].Type != "reasoning" || resp.Output[1].Type != "message" {
		t.Fatalf("response %s", resp.RawJSON())
	}
	if got := strings.TrimSpace(resp.OutputText()); got != "Hello there, friend." {
		t.Errorf("output text %q", resp.OutputText())
	}
	r := resp.Output[0].AsReasoning()
	if len(r.Content) != 1 || r.Content[0].Type != "reasoning_text" || r.Content[0].Text != "\nThe user greets me.\n" || len(r.Summary) != 0 {
		t.Errorf("reasoning item %+v", r)
	}
	u := resp.Usage
	if u.InputTokens == 0 || u.OutputTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens ||
		u.OutputTokensDetails.ReasoningTokens == 0 || u.OutputTokensDetails.ReasoningTokens >= u.OutputTokens {
		t.Errorf("usage %s", u.RawJSON())
	}
	if !strings.HasPrefix(resp.ID, "resp_") || resp.Object != "response" || resp.Model != "think" || !strings.Contains(resp.RawJSON(), `"store":false`) {
		t.Errorf("response %s", resp.RawJSON())
	}

	s := readStream(t, ts, sayHi("think"))
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.done",
		"response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(s.types, " ") != strings.Join(want, " ") {
		t.Errorf("events\n%q\nwant\n%q", s.types, want)
	}
	if s.text.String() != resp.OutputText() || s.final.OutputText() != resp.OutputText() {
		t.Errorf("streamed text %q, final %q, non-streamed %q", s.text.String(), s.final.OutputText(), resp.OutputText())
	}
	if s.thinking.String() != r.Content[0].Text || s.thoughtDone != r.Content[0].Text {
		t.Errorf("streamed reasoning %q (done %q)", s.thinking.String(), s.thoughtDone)
	}
	fu := s.final.Usage
	if fu.OutputTokens != u.OutputTokens || fu.OutputTokensDetails.ReasoningTokens != u.OutputTokensDetails.ReasoningTokens {
		t.Errorf("streamed usage %s, non-streamed %s", fu.RawJSON(), u.RawJSON())
	}
	// The same prompt again: the engine reuses the prefix and says so.
	if fu.InputTokensDetails.CachedTokens == 0 {
		t.Errorf("no cached tokens reported on a repeated prompt: %s", fu.RawJSON())
	}
}

func TestResponsesMaxOutputTokens(t *testing.T) {
	ts := common(t)
	params := sayHi("think")
	params.MaxOutputTokens = openai.Int(3)
	params.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffortLow}
	resp, err := ts.client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != "incomplete" || resp.IncompleteDetails.Reason != "max_output_tokens" || resp.Usage.OutputTokens != 3 {
		t.Errorf("response %s", resp.RawJSON())
	}
	if it := resp.Output[len(resp.Output)-1]; it.Status != "incomplete" {
		t.Errorf("last item %s", it.RawJSON())
	}
	s := readStream(t, ts, params)
	if s.last != "response.incomplete" || s.final.Status != "incomplete" || s.final.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("last event %s, final %s", s.last, s.final.RawJSON())
	}
}

func TestResponsesBadRequests(t *testing.T) {
	ts := common(t)
	long := strings.Repeat("word ", 400)
	tool := `"tools":[{"type":"function","name":"get_weather"}]`
	for _, tt := range []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"previous_response_id", `{"model":"think","input":"hi","previous_response_id":"resp_1"}`, 400, "unsupported_parameter", "previous_response_id"},
		{"store", `{"model":"think","input":"hi","store":true}`, 400, "unsupported_parameter", "store"},
		{"background", `{"model":"think","input":"hi","background":true}`, 400, "unsupported_parameter", "background"},
		{"conversation", `{"model":"think","input":"hi","conversation":"conv_1"}`, 400, "unsupported_parameter", "conversation"},
		{"item_reference", `{"model":"think","input":[{"type":"item_reference","id":"msg_1"}]}`, 400, "unsupported_parameter", "input[0].type"},
		{"image", `{"model":"think","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, 400, "unsupported_parameter", "input[0].content[0].type"},
		{"hosted tool", `{"model":"think","input":"hi","tools":[{"type":"web_search"}]}`, 400, "unsupported_parameter", "tools[0].type"},
		{"top_logprobs 21", `{"model":"think","input":"hi","top_logprobs":21}`, 400, "invalid_request_error", "top_logprobs"},
		{"top_logprobs negative", `{"model":"think","input":"hi","top_logprobs":-1,"include":["message.output_text.logprobs"]}`, 400, "invalid_request_error", "top_logprobs"},
		{"include unknown", `{"model":"think","input":"hi","include":["message.output_text.logprobs","message.output_text.lgprobs"]}`, 400, "unsupported_parameter", "include[1]"},
		{"include hosted tool output", `{"model":"think","input":"hi","include":["file_search_call.results"]}`, 400, "unsupported_parameter", "include[0]"},
		{"include input images", `{"model":"think","input":"hi","include":["reasoning.encrypted_content","message.input_image.image_url"]}`, 400, "unsupported_parameter", "include[1]"},
		{"unknown parameter", `{"model":"think","input":"hi","messages":[]}`, 400, "unknown_parameter", "messages"},
		{"no input", `{"model":"think"}`, 400, "invalid_request_error", "input"},
		{"max_output_tokens", `{"model":"think","input":"hi","max_output_tokens":0}`, 400, "invalid_request_error", "max_output_tokens"},
		{"temperature", `{"model":"think","input":"hi","temperature":3}`, 400, "invalid_request_error", "temperature"},
		{"effort", `{"model":"think","input":"hi","reasoning":{"effort":"max"}}`, 400, "invalid_request_error", "reasoning.effort"},
		{"unknown model", `{"model":"nope","input":"hi"}`, 404, "model_not_found", "model"},
		{"bad schema", `{"model":"json","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"nope"}}}}`, 400, "invalid_request_error", "text.format.schema"},
		{"strict tool schema", `{"model":"tool","input":"hi","tools":[{"type":"function","name":"get_weather","strict":true,"parameters":{"type":"object","not":{"multipleOf":2}}}]}`, 400, "invalid_request_error", "tools[0].parameters"},
		{"tool_choice unknown function", `{"model":"tool","input":"hi",` + tool + `,"tool_choice":{"type":"function","name":"nope"}}`, 400, "invalid_request_error", "tool_choice"},
		{"context length", `{"model":"think","input":"` + long + `"}`, 400, "context_length_exceeded", "input"},
		{"not json", `{"model":`, 400, "invalid_request_error", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := postTo(t, ts, "/v1/responses", tt.body, nil)
			code, param := errorOf(body)
			if param == nil {
				param = ""
			}
			if resp.StatusCode != tt.status || code != tt.code || param != tt.param {
				t.Errorf("status %d code %v param %v, want %d %s %q: %v", resp.StatusCode, code, param, tt.status, tt.code, tt.param, body)
			}
			if e, _ := body["error"].(map[string]any); e["message"] == "" || e["type"] != "invalid_request_error" {
				t.Errorf("error body %v", body)
			}
			ok, okBody := postTo(t, ts, "/v1/responses", `{"model":"think","input":"hi","max_output_tokens":2}`, nil)
			if ok.StatusCode != http.StatusOK || okBody["status"] != "incomplete" {
				t.Errorf("the server no longer serves: %d %v", ok.StatusCode, okBody)
			}
		})
	}
	_, body := postTo(t, ts, "/v1/responses", `{"model":"think","input":"hi","store":true}`, nil)
	if e, _ := body["error"].(map[string]any); !strings.Contains(e["message"].(string), "stateless") {
		t.Errorf("store: true refused without saying why: %v", body)
	}
	_, body = postTo(t, ts, "/v1/responses", `{"model":"think","input":"hi","include":["message.output_text.lgprobs"]}`, nil)
	if e, _ := body["error"].(map[string]any); !strings.Contains(e["message"].(string), `"message.output_text.lgprobs"`) {
		t.Errorf("an unknown include value refused without naming it: %v", body)
	}
}

// TestResponsesNode drives the endpoint with the official openai npm
// package: responses.create streamed and not, and the stream helper.
func TestResponsesNode(t *testing.T) {
	ts := common(t)
	script := fixtures.NodeScript(t, "testdata/responses.mjs")
	cmd := exec.CommandContext(t.Context(), "node", script)
	cmd.Env = append(cmd.Environ(), "PRISM_TEST_BASE_URL="+ts.url+"/v1")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	var got struct {
		Text, StreamedText, HelperText, Reasoning, StreamedReasoning string
		Status, Last                                                 string
		Events                                                       []string
		Arguments, StreamedArguments, CallName                       string
		ReasoningTokens, OutputTokens                                int
		LogprobText                                                  string
		LogprobBytes                                                 []int64
		Logprobs, StreamedLogprobs, DoneLogprobs                     []struct {
			Token   string
			Logprob float64
			Top     []string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	if strings.TrimSpace(got.Text) != "Hello there, friend." || got.StreamedText != got.Text || got.HelperText != got.Text {
		t.Errorf("text %q, streamed %q, helper %q", got.Text, got.StreamedText, got.HelperText)
	}
	if got.Reasoning != "\nThe user greets me.\n" || got.StreamedReasoning != got.Reasoning {
		t.Errorf("reasoning %q, streamed %q", got.Reasoning, got.StreamedReasoning)
	}
	if got.Status != "completed" || got.Last != "response.completed" || len(got.Events) == 0 || got.Events[0] != "response.created" {
		t.Errorf("status %q, events %q", got.Status, got.Events)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(got.StreamedArguments), &args); err != nil || args["city"] != "Paris" ||
		got.StreamedArguments != got.Arguments || got.CallName != "get_weather" {
		t.Errorf("call %q: arguments %q, streamed %q (%v)", got.CallName, got.Arguments, got.StreamedArguments, err)
	}
	if got.ReasoningTokens == 0 || got.ReasoningTokens >= got.OutputTokens {
		t.Errorf("usage: %d reasoning of %d output tokens", got.ReasoningTokens, got.OutputTokens)
	}
	var spelt strings.Builder
	for _, e := range got.Logprobs {
		spelt.WriteString(e.Token)
		if e.Logprob > 0 || len(e.Top) != 2 {
			t.Errorf("entry %+v", e)
		}
	}
	if strings.TrimSpace(got.LogprobText) != "Hello there, friend." || spelt.String() != got.LogprobText || bytesOf(got.LogprobBytes) != got.LogprobText {
		t.Errorf("logprobs spell %q (bytes %q), text %q", spelt.String(), bytesOf(got.LogprobBytes), got.LogprobText)
	}
	if !reflect.DeepEqual(got.StreamedLogprobs, got.Logprobs) || !reflect.DeepEqual(got.DoneLogprobs, got.Logprobs) {
		t.Errorf("streamed logprobs %+v, done %+v, whole %+v", got.StreamedLogprobs, got.DoneLogprobs, got.Logprobs)
	}
}

func weatherFunction() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name: "get_weather", Description: openai.String("Current weather"), Strict: openai.Bool(false),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}}}
}

func TestResponsesFunctionCall(t *testing.T) {
	ts := common(t)
	params := sayHi("tool")
	params.Tools = weatherFunction()
	resp, err := ts.client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != "completed" || len(resp.Output) != 1 || resp.Output[0].Type != "function_call" {
		t.Fatalf("response %s", resp.RawJSON())
	}
	call := resp.Output[0].AsFunctionCall()
	var args map[string]string
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || args["city"] != "Paris" ||
		call.Name != "get_weather" || !strings.HasPrefix(call.CallID, "call_") || !strings.HasPrefix(call.ID, "fc_") {
		t.Errorf("call %+v (%v)", call, err)
	}

	s := readStream(t, ts, params)
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if strings.Join(s.types, " ") != strings.Join(want, " ") {
		t.Errorf("events\n%q\nwant\n%q", s.types, want)
	}
	if !json.Valid([]byte(s.args.String())) || s.args.String() != call.Arguments || s.argsDone != call.Arguments {
		t.Errorf("joined argument deltas %q, done %q, non-streamed %q", s.args.String(), s.argsDone, call.Arguments)
	}
	if fc := s.final.Output[0].AsFunctionCall(); fc.Arguments != call.Arguments || fc.Name != "get_weather" {
		t.Errorf("final %s", s.final.RawJSON())
	}

	// With text.format beside the tools, the answer is calls or one JSON
	// value: the model's call is kept.
	formatted := params
	formatted.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
	r, err := ts.client.Responses.New(t.Context(), formatted)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 1 || r.Output[0].AsFunctionCall().Arguments != call.Arguments {
		t.Errorf("tools with text.format: %s", r.RawJSON())
	}

	// The next turn sends the call and its output back as items.
	output := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
	output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	next := responses.ResponseNewParams{Model: "tool", Tools: weatherFunction(), Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
			output,
		}}}
	if _, err := ts.client.Responses.New(t.Context(), next); err != nil {
		t.Fatal(err)
	}
}

func TestResponsesJSONSchema(t *testing.T) {
	ts := common(t)
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"city", "temperature"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "temperature": map[string]any{"type": "integer"}}}
	format := responses.ResponseFormatTextConfigParamOfJSONSchema("weather", schema)
	format.OfJSONSchema.Strict = openai.Bool(true)
	params := sayHi("json")
	params.Text = responses.ResponseTextConfigParam{Format: format}
	resp, err := ts.client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		City        string `json:"city"`
		Temperature int    `json:"temperature"`
	}
	dec := json.NewDecoder(strings.NewReader(resp.OutputText()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || got.City != "Paris" || resp.Status != "completed" {
		t.Fatalf("output %q (%v), status %q", resp.OutputText(), err, resp.Status)
	}
	if s := readStream(t, ts, params); s.text.String() != resp.OutputText() {
		t.Errorf("streamed %q", s.text.String())
	}
}

// Ollama's models answer the Responses API through the same backend
// interface as chat, and a generation that fails after the headers ends the
// stream with an error event and response.failed.
func TestResponsesOllama(t *testing.T) {
	ts, _ := withOllama(t)
	resp, err := ts.client.Responses.New(t.Context(), sayHi("qwen3:0.6b"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.Output[0].AsReasoning().Content[0].Text != "The user greets me." || resp.OutputText() != "Hello there, friend." ||
		resp.Usage.InputTokens != 11 || resp.Usage.OutputTokens != 6 || resp.Status != "completed" {
		t.Errorf("response %s", resp.RawJSON())
	}
	if s := readStream(t, ts, sayHi("qwen3:0.6b")); s.text.String() != resp.OutputText() || s.thinking.String() != "The user greets me." {
		t.Errorf("streamed %q / %q", s.text.String(), s.thinking.String())
	}
	params := sayHi("llama3.2:3b")
	params.Tools = weatherFunction()
	s := readStream(t, ts, params)
	if fc := s.final.Output[0].AsFunctionCall(); fc.Name != "get_weather" || !json.Valid([]byte(s.args.String())) || s.args.String() != fc.Arguments {
		t.Errorf("call %s, joined arguments %q", s.final.RawJSON(), s.args.String())
	}

	// Ollama reports no log-probabilities: asking is a 400 naming the
	// field that asked, as on chat, and the server serves on.
	for _, tc := range []struct{ body, param string }{
		{`{"model":"qwen3:0.6b","input":"hi","top_logprobs":2}`, "top_logprobs"},
		{`{"model":"qwen3:0.6b","input":"hi","include":["reasoning.encrypted_content","message.output_text.logprobs"]}`, "include[1]"},
	} {
		r, body := postTo(t, ts, "/v1/responses", tc.body, nil)
		if code, param := errorOf(body); r.StatusCode != 400 || code != "unsupported_parameter" || param != tc.param {
			t.Errorf("%s: status %d %v", tc.body, r.StatusCode, body)
		}
		if e, _ := body["error"].(map[string]any); !strings.Contains(e["message"].(string), "Ollama") {
			t.Errorf("%s: %v", tc.body, body)
		}
		if ok, out := postTo(t, ts, "/v1/responses", `{"model":"qwen3:0.6b","input":"hi","top_logprobs":0}`, nil); ok.StatusCode != 200 || out["status"] != "completed" {
			t.Errorf("the server no longer serves: %d %v", ok.StatusCode, out)
		}
	}

	stream := ts.client.Responses.NewStreaming(t.Context(), sayHi("broken:1b"))
	var types []string
	var text strings.Builder
	var failed responses.Response
	for stream.Next() {
		e := stream.Current()
		types = append(types, e.Type)
		if e.Type == "response.output_text.delta" {
			text.WriteString(e.Delta)
		}
		if e.Type == "error" && (e.Code != "backend_unavailable" || e.Message == "") {
			t.Errorf("error event %s", e.RawJSON())
		}
		if e.Type == "response.failed" {
			failed = e.Response
		}
	}
	n := len(types)
	if n < 2 || types[n-2] != "error" || types[n-1] != "response.failed" || text.String() != "a" ||
		failed.Status != "failed" || failed.Error.Code != "backend_unavailable" {
		t.Errorf("events %q, text %q, failed %s (%v)", types, text.String(), failed.RawJSON(), stream.Err())
	}
}
