package wire_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prism-local/prism/internal/app/wire"
)

// refusal is what a bad request must come back with.
type refusal struct {
	status int
	code   string
	param  string
}

func checkRefusal(t *testing.T, err error, want refusal) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("err = %v (%T), want *wire.Error", err, err)
	}
	if we.Status != want.status || we.Code() != want.code || we.Param != want.param {
		t.Errorf("got status %d code %q param %q (%s); want %d %q %q", we.Status, we.Code(), we.Param, we.Message, want.status, want.code, want.param)
	}
	if we.Message == "" {
		t.Error("empty message")
	}
}

func TestDecodeChatRefuses(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	bad := http.StatusBadRequest
	for _, c := range []struct {
		name, body string
		want       refusal
	}{
		{"empty", ``, refusal{bad, wire.CodeInvalidRequest, ""}},
		{"not an object", `[1]`, refusal{bad, wire.CodeInvalidRequest, ""}},
		{"trailing data", `{"model":"m",` + msgs + `} {}`, refusal{bad, wire.CodeInvalidRequest, ""}},
		{"syntax", `{"model":"m",`, refusal{bad, wire.CodeInvalidRequest, ""}},
		{"invalid utf-8", "{\"model\":\"m\xff\"," + msgs + "}", refusal{bad, wire.CodeInvalidRequest, ""}},
		{"unknown parameter", `{"model":"m",` + msgs + `,"temprature":1}`, refusal{bad, wire.CodeUnknownParameter, "temprature"}},
		{"no model", `{` + msgs + `}`, refusal{bad, wire.CodeInvalidRequest, "model"}},
		{"model not a string", `{"model":3,` + msgs + `}`, refusal{bad, wire.CodeInvalidRequest, "model"}},
		{"no messages", `{"model":"m","messages":[]}`, refusal{bad, wire.CodeInvalidRequest, "messages"}},
		{"messages an object", `{"model":"m","messages":{}}`, refusal{bad, wire.CodeInvalidRequest, "messages"}},
		{"no role", `{"model":"m","messages":[{"content":"x"}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[0].role"}},
		{"bad role", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"robot","content":"x"}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[1].role"}},
		{"function role", `{"model":"m","messages":[{"role":"function","content":"x","name":"f"}]}`, refusal{bad, wire.CodeUnsupportedParameter, "messages[0].role"}},
		{"content a number", `{"model":"m","messages":[{"role":"user","content":5}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[0].content"}},
		{"user without content", `{"model":"m","messages":[{"role":"user"}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[0].content"}},
		{"part text wrong type", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[0].content[0].text"}},
		{"image part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}`, refusal{bad, wire.CodeUnsupportedParameter, "messages[0].content[1].type"}},
		{"tool message without id", `{"model":"m","messages":[{"role":"tool","content":"42"}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[0].tool_call_id"}},
		{"two reasonings", `{"model":"m","messages":[{"role":"assistant","content":"a","reasoning_content":"x","reasoning":"y"}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[0].reasoning"}},
		{"call without name", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]}`, refusal{bad, wire.CodeInvalidRequest, "messages[0].tool_calls[0].function.name"}},
		{"n 2", `{"model":"m",` + msgs + `,"n":2}`, refusal{bad, wire.CodeUnsupportedParameter, "n"}},
		{"n 0", `{"model":"m",` + msgs + `,"n":0}`, refusal{bad, wire.CodeInvalidRequest, "n"}},
		{"n fractional", `{"model":"m",` + msgs + `,"n":1.5}`, refusal{bad, wire.CodeInvalidRequest, "n"}},
		{"logit_bias", `{"model":"m",` + msgs + `,"logit_bias":{"5":1}}`, refusal{bad, wire.CodeUnsupportedParameter, "logit_bias"}},
		{"audio modality", `{"model":"m",` + msgs + `,"modalities":["text","audio"]}`, refusal{bad, wire.CodeUnsupportedParameter, "modalities[1]"}},
		{"functions", `{"model":"m",` + msgs + `,"functions":[]}`, refusal{bad, wire.CodeUnsupportedParameter, "functions"}},
		{"max_tokens 0", `{"model":"m",` + msgs + `,"max_tokens":0}`, refusal{bad, wire.CodeInvalidRequest, "max_tokens"}},
		{"limits disagree", `{"model":"m",` + msgs + `,"max_tokens":5,"max_completion_tokens":6}`, refusal{bad, wire.CodeInvalidRequest, "max_tokens"}},
		{"top_logprobs without logprobs", `{"model":"m",` + msgs + `,"top_logprobs":3}`, refusal{bad, wire.CodeInvalidRequest, "top_logprobs"}},
		{"top_logprobs 21", `{"model":"m",` + msgs + `,"logprobs":true,"top_logprobs":21}`, refusal{bad, wire.CodeInvalidRequest, "top_logprobs"}},
		{"stream_options without stream", `{"model":"m",` + msgs + `,"stream_options":{"include_usage":true}}`, refusal{bad, wire.CodeInvalidRequest, "stream_options"}},
		{"stream_options unknown", `{"model":"m",` + msgs + `,"stream":true,"stream_options":{"include_usage":true,"x":1}}`, refusal{bad, wire.CodeUnknownParameter, "stream_options.x"}},
		{"stop a number", `{"model":"m",` + msgs + `,"stop":7}`, refusal{bad, wire.CodeInvalidRequest, "stop"}},
		{"stop list of numbers", `{"model":"m",` + msgs + `,"stop":["a",7]}`, refusal{bad, wire.CodeInvalidRequest, "stop[1]"}},
		{"response_format type", `{"model":"m",` + msgs + `,"response_format":{"type":"yaml"}}`, refusal{bad, wire.CodeInvalidRequest, "response_format.type"}},
		{"json_schema without schema object", `{"model":"m",` + msgs + `,"response_format":{"type":"json_schema"}}`, refusal{bad, wire.CodeInvalidRequest, "response_format.json_schema"}},
		{"json_schema bad name", `{"model":"m",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}}`, refusal{bad, wire.CodeInvalidRequest, "response_format.json_schema.name"}},
		{"json_schema schema a string", `{"model":"m",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":"x"}}}`, refusal{bad, wire.CodeInvalidRequest, "response_format.json_schema.schema"}},
		{"tool type", `{"model":"m",` + msgs + `,"tools":[{"type":"code_interpreter"}]}`, refusal{bad, wire.CodeUnsupportedParameter, "tools[0].type"}},
		{"tool without function", `{"model":"m",` + msgs + `,"tools":[{"type":"function"}]}`, refusal{bad, wire.CodeInvalidRequest, "tools[0].function"}},
		{"tool bad name", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"a.b"}}]}`, refusal{bad, wire.CodeInvalidRequest, "tools[0].function.name"}},
		{"tool unknown field", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameter":{}}}]}`, refusal{bad, wire.CodeUnknownParameter, "tools[0].function.parameter"}},
		{"chat_template_kwargs list", `{"model":"m",` + msgs + `,"chat_template_kwargs":[]}`, refusal{bad, wire.CodeInvalidRequest, "chat_template_kwargs"}},
		{"reasoning_effort", `{"model":"m",` + msgs + `,"reasoning_effort":"max"}`, refusal{bad, wire.CodeInvalidRequest, "reasoning_effort"}},
		{"temperature a string", `{"model":"m",` + msgs + `,"temperature":"hot"}`, refusal{bad, wire.CodeInvalidRequest, "temperature"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.DecodeChat([]byte(c.body))
			checkRefusal(t, err, c.want)
		})
	}
}

func TestDecodeChat(t *testing.T) {
	body := `{
		"model": "qwen", "stream": true, "stream_options": {"include_usage": true},
		"messages": [
			{"role": "system", "content": "be brief"},
			{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b", "cache_control": {}}]},
			{"role": "assistant", "content": null, "refusal": null, "annotations": [], "reasoning": "hmm",
			 "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get", "arguments": "{\"x\":1}"}}]},
			{"role": "tool", "tool_call_id": "call_1", "content": "42"}
		],
		"tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {}}}}],
		"tool_choice": {"type": "function", "function": {"name": "get"}},
		"response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": true}},
		"stop": "END", "max_completion_tokens": 64, "temperature": 0.5, "top_p": 0.9, "seed": 7,
		"frequency_penalty": 0, "presence_penalty": 0, "logprobs": true, "top_logprobs": 2,
		"reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": false}, "n": 1,
		"user": "u", "metadata": {"k": "v"}, "store": false, "parallel_tool_calls": false, "logit_bias": null, "modalities": ["text"]
	}`
	req, err := wire.DecodeChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "qwen" || len(req.Messages) != 4 || !req.IncludeUsage() || req.Limit() != 64 {
		t.Fatalf("decoded %+v", req)
	}
	if got := req.Messages[1].Content.String(); got != "ab" {
		t.Errorf("parts text %q", got)
	}
	if th := req.Messages[2].Thinking(); th == nil || *th != "hmm" {
		t.Errorf("reasoning of the assistant message: %v", th)
	}
	if c := req.Messages[2].ToolCalls[0]; c.ID != "call_1" || c.Function.Arguments != `{"x":1}` {
		t.Errorf("tool call %+v", c)
	}
	if len(req.Stop) != 1 || req.Stop[0] != "END" {
		t.Errorf("stop %q", req.Stop)
	}
	raw := req.RawTools()
	if len(raw) != 1 || !strings.HasPrefix(string(raw[0]), `{"type": "function"`) {
		t.Errorf("raw tools %s", raw)
	}
	if kw := req.TemplateKwargs(); string(kw["enable_thinking"]) != "false" {
		t.Errorf("template kwargs %v", kw)
	}
	if string(req.ToolChoice) != `{"type": "function", "function": {"name": "get"}}` {
		t.Errorf("tool_choice %s", req.ToolChoice)
	}
	if req.Seed == nil || *req.Seed != 7 || req.TopLogprobs == nil || *req.TopLogprobs != 2 {
		t.Errorf("seed/top_logprobs %v %v", req.Seed, req.TopLogprobs)
	}
}

// A value from the request is not repeated whole in an error.
func TestErrorsClipValues(t *testing.T) {
	long := strings.Repeat("é", 1000)
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"` + long + `","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"` + long + `":1}`,
	} {
		_, err := wire.DecodeChat([]byte(body))
		var we *wire.Error
		if !errors.As(err, &we) || len(we.Message) > 300 || len(we.Param) > 300 || !utf8.ValidString(we.Message) || !utf8.ValidString(we.Param) {
			t.Errorf("error of %d bytes, param of %d: %v", len(we.Message), len(we.Param), err)
		}
	}
}

func TestReadBody(t *testing.T) {
	if _, err := wire.ReadBody(strings.NewReader(strings.Repeat(" ", wire.MaxBodyBytes))); err != nil {
		t.Fatalf("a body of exactly the limit: %v", err)
	}
	_, err := wire.ReadBody(strings.NewReader(strings.Repeat(" ", wire.MaxBodyBytes+1)))
	checkRefusal(t, err, refusal{http.StatusRequestEntityTooLarge, wire.CodeRequestTooLarge, ""})
	_, err = wire.ReadBody(http.MaxBytesReader(nil, http.NoBody, 0))
	if err != nil {
		t.Errorf("empty body: %v", err)
	}
}

func TestDecodeCompletion(t *testing.T) {
	bad := http.StatusBadRequest
	for _, c := range []struct {
		name, body string
		want       refusal
	}{
		{"no prompt", `{"model":"m"}`, refusal{bad, wire.CodeInvalidRequest, "prompt"}},
		{"two prompts", `{"model":"m","prompt":["a","b"]}`, refusal{bad, wire.CodeUnsupportedParameter, "prompt"}},
		{"negative id", `{"model":"m","prompt":[1,-2]}`, refusal{bad, wire.CodeInvalidRequest, "prompt[1]"}},
		{"mixed ids", `{"model":"m","prompt":[1,"a"]}`, refusal{bad, wire.CodeInvalidRequest, "prompt[1]"}},
		{"nested strings", `{"model":"m","prompt":[["a"]]}`, refusal{bad, wire.CodeInvalidRequest, "prompt[0][0]"}},
		{"empty nested", `{"model":"m","prompt":[[]]}`, refusal{bad, wire.CodeInvalidRequest, "prompt[0]"}},
		{"best_of", `{"model":"m","prompt":"a","best_of":3}`, refusal{bad, wire.CodeUnsupportedParameter, "best_of"}},
		{"suffix", `{"model":"m","prompt":"a","suffix":"z"}`, refusal{bad, wire.CodeUnsupportedParameter, "suffix"}},
		{"logprobs 6", `{"model":"m","prompt":"a","logprobs":6}`, refusal{bad, wire.CodeInvalidRequest, "logprobs"}},
		{"unknown", `{"model":"m","prompt":"a","messages":[]}`, refusal{bad, wire.CodeUnknownParameter, "messages"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.DecodeCompletion([]byte(c.body))
			checkRefusal(t, err, c.want)
		})
	}
	for body, want := range map[string]wire.Prompt{
		`{"model":"m","prompt":"hi"}`:   {Text: "hi"},
		`{"model":"m","prompt":["hi"]}`: {Text: "hi"},
		`{"model":"m","prompt":[1,2]}`:  {IDs: []int{1, 2}, IsIDs: true},
		`{"model":"m","prompt":[[3]]}`:  {IDs: []int{3}, IsIDs: true},
	} {
		req, err := wire.DecodeCompletion([]byte(body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if req.Prompt.Text != want.Text || req.Prompt.IsIDs != want.IsIDs || len(req.Prompt.IDs) != len(want.IDs) {
			t.Errorf("%s: prompt %+v, want %+v", body, req.Prompt, want)
		}
		if req.Limit() != wire.DefaultCompletionMaxTokens {
			t.Errorf("default limit %d", req.Limit())
		}
	}
}
