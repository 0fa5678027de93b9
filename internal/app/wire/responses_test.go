package wire_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/app/wire"
)

func TestDecodeResponsesRefuses(t *testing.T) {
	bad := http.StatusBadRequest
	for _, c := range []struct {
		name, body string
		want       refusal
	}{
		{"previous_response_id", `{"model":"m","input":"hi","previous_response_id":"resp_1"}`, refusal{bad, wire.CodeUnsupportedParameter, "previous_response_id"}},
		{"store true", `{"model":"m","input":"hi","store":true}`, refusal{bad, wire.CodeUnsupportedParameter, "store"}},
		{"background", `{"model":"m","input":"hi","background":true}`, refusal{bad, wire.CodeUnsupportedParameter, "background"}},
		{"conversation", `{"model":"m","input":"hi","conversation":"c"}`, refusal{bad, wire.CodeUnsupportedParameter, "conversation"}},
		{"no input", `{"model":"m"}`, refusal{bad, wire.CodeInvalidRequest, "input"}},
		{"input a number", `{"model":"m","input":1}`, refusal{bad, wire.CodeInvalidRequest, "input"}},
		{"item reference", `{"model":"m","input":[{"type":"item_reference","id":"x"}]}`, refusal{bad, wire.CodeUnsupportedParameter, "input[0].type"}},
		{"message without role", `{"model":"m","input":[{"type":"message","content":"x"}]}`, refusal{bad, wire.CodeInvalidRequest, "input[0].role"}},
		{"image", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, refusal{bad, wire.CodeUnsupportedParameter, "input[0].content[0].type"}},
		{"output without call", `{"model":"m","input":[{"type":"function_call_output","output":"1"}]}`, refusal{bad, wire.CodeInvalidRequest, "input[0].call_id"}},
		{"web search tool", `{"model":"m","input":"x","tools":[{"type":"web_search"}]}`, refusal{bad, wire.CodeUnsupportedParameter, "tools[0].type"}},
		{"hosted tool_choice", `{"model":"m","input":"x","tool_choice":{"type":"file_search"}}`, refusal{bad, wire.CodeUnsupportedParameter, "tool_choice"}},
		{"max_output_tokens", `{"model":"m","input":"x","max_output_tokens":0}`, refusal{bad, wire.CodeInvalidRequest, "max_output_tokens"}},
		{"format type", `{"model":"m","input":"x","text":{"format":{"type":"xml"}}}`, refusal{bad, wire.CodeInvalidRequest, "text.format.type"}},
		{"unknown", `{"model":"m","input":"x","messages":[]}`, refusal{bad, wire.CodeUnknownParameter, "messages"}},
		{"only reasoning", `{"model":"m","input":[{"type":"reasoning","summary":[]}]}`, refusal{bad, wire.CodeInvalidRequest, "input"}},
		{"image output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"x"}]}]}`, refusal{bad, wire.CodeUnsupportedParameter, "input[0].output[0].type"}},
		{"store true, the first key", `{"store":true,"model":"m","input":"hi"}`, refusal{bad, wire.CodeUnsupportedParameter, "store"}},
		{"top_logprobs 21", `{"model":"m","input":"hi","top_logprobs":21}`, refusal{bad, wire.CodeInvalidRequest, "top_logprobs"}},
		{"top_logprobs negative", `{"model":"m","input":"hi","top_logprobs":-1}`, refusal{bad, wire.CodeInvalidRequest, "top_logprobs"}},
		{"include hosted tool output", `{"model":"m","input":"hi","include":["message.output_text.logprobs","web_search_call.action.sources"]}`, refusal{bad, wire.CodeUnsupportedParameter, "include[1]"}},
		{"include input images", `{"model":"m","input":"hi","include":["message.input_image.image_url"]}`, refusal{bad, wire.CodeUnsupportedParameter, "include[0]"}},
		{"include unknown", `{"model":"m","input":"hi","include":["reasoning.encrypted_content","message.output_text.logprob"]}`, refusal{bad, wire.CodeUnsupportedParameter, "include[1]"}},
		{"include not strings", `{"model":"m","input":"hi","include":[1]}`, refusal{bad, wire.CodeInvalidRequest, "include[0]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.DecodeResponses([]byte(c.body))
			checkRefusal(t, err, c.want)
		})
	}
}

func TestResponsesMessages(t *testing.T) {
	req, err := wire.DecodeResponses([]byte(`{
		"model": "m", "instructions": "be brief", "store": false,
		"input": [
			{"role": "user", "content": "weather?"},
			{"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "look it up"}]},
			{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get", "arguments": "{}", "status": "completed"},
			{"type": "function_call", "call_id": "call_2", "name": "get", "arguments": "{\"d\":1}"},
			{"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
			{"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "rain"}]},
			{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "sunny", "annotations": []}]}
		],
		"tools": [{"type": "function", "name": "get", "parameters": {"type": "object"}}],
		"tool_choice": {"type": "function", "name": "get"},
		"text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}}},
		"reasoning": {"effort": "high"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := req.Messages()
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,tool,assistant" {
		t.Fatalf("roles %s", got)
	}
	calls := msgs[2]
	if len(calls.ToolCalls) != 2 || calls.ToolCalls[1].ID != "call_2" || calls.ReasoningContent == nil || *calls.ReasoningContent != "look it up" {
		t.Errorf("assistant calls message %+v", calls)
	}
	if msgs[4].Content.String() != "rain" || msgs[4].ToolCallID != "call_2" {
		t.Errorf("tool message %+v", msgs[4])
	}
	choice, err := req.ChatToolChoice()
	if err != nil || string(choice) != `{"function":{"name":"get"},"type":"function"}` {
		t.Errorf("tool choice %s, %v", choice, err)
	}
	tools := req.ChatTools()
	if len(tools) != 1 || string(tools[0]) != `{"type":"function","function":{"name":"get","parameters":{"type":"object"}}}` {
		t.Errorf("tools %s", tools)
	}
	if f := req.ResponseFormat(); f == nil || f.Type != "json_schema" || f.JSONSchema.Name != "w" {
		t.Errorf("format %+v", f)
	}
}

func TestResponseShapes(t *testing.T) {
	req, err := wire.DecodeResponses([]byte(`{"model":"m","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := wire.NewResponse("resp_1", 1700000000, req)
	var seq wire.EventSeq
	lp := []wire.TokenLogprob{{Token: "lo", Logprob: -0.5, Bytes: []int{108, 111}, TopLogprobs: []wire.TopLogprob{{Token: "lo", Logprob: -0.5, Bytes: []int{108, 111}}}}}
	events := []wire.Event{
		seq.Lifecycle(wire.EventCreated, r),
		seq.Item(wire.EventItemAdded, 0, wire.OutputItem{Type: wire.ItemMessage, ID: "msg_1", Status: wire.StatusInProgress}),
		seq.Part(wire.EventPartAdded, "msg_1", 0, 0, wire.OutputPart{Type: "output_text"}),
		seq.TextDelta(wire.EventTextDelta, "msg_1", 0, 0, "Hel", nil),
		seq.TextDelta(wire.EventReasoningDelta, "rs_1", 0, 0, "hmm", nil),
		seq.ArgumentsDelta("fc_1", 1, `{"a"`),
		seq.ArgumentsDone("fc_1", 1, "get", `{"a":1}`),
		seq.Item(wire.EventItemDone, 1, wire.OutputItem{Type: wire.ItemFunctionCall, ID: "fc_1", Status: wire.StatusCompleted, CallID: "call_1", Name: "get", Arguments: `{"a":1}`}),
		seq.Item(wire.EventItemDone, 2, wire.OutputItem{Type: wire.ItemReasoning, ID: "rs_1", Content: []wire.OutputPart{{Type: "reasoning_text", Text: "hmm"}}}),
		seq.TextDelta(wire.EventTextDelta, "msg_1", 0, 0, "lo", lp),
		seq.TextDone(wire.EventTextDone, "msg_1", 0, 0, "Hello", lp),
		seq.Part(wire.EventPartDone, "msg_1", 0, 0, wire.OutputPart{Type: "output_text", Text: "lo", Logprobs: lp}),
	}
	want := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"in_progress","error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"m","output":[],"parallel_tool_calls":true,"previous_response_id":null,"store":false,"temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"top_logprobs":null,"truncation":"disabled","usage":null,"metadata":{}}}`,
		`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","logprobs":[]}`,
		`{"type":"response.reasoning_text.delta","sequence_number":4,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"hmm"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":1,"delta":"{\"a\""}`,
		`{"type":"response.function_call_arguments.done","sequence_number":6,"item_id":"fc_1","output_index":1,"name":"get","arguments":"{\"a\":1}"}`,
		`{"type":"response.output_item.done","sequence_number":7,"output_index":1,"item":{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"get","arguments":"{\"a\":1}"}}`,
		`{"type":"response.output_item.done","sequence_number":8,"output_index":2,"item":{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"hmm"}]}}`,
		`{"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo","logprobs":[{"token":"lo","logprob":-0.5,"bytes":[108,111],"top_logprobs":[{"token":"lo","logprob":-0.5,"bytes":[108,111]}]}]}`,
		`{"type":"response.output_text.done","sequence_number":10,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hello","logprobs":[{"token":"lo","logprob":-0.5,"bytes":[108,111],"top_logprobs":[{"token":"lo","logprob":-0.5,"bytes":[108,111]}]}]}`,
		`{"type":"response.content_part.done","sequence_number":11,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"lo","annotations":[],"logprobs":[{"token":"lo","logprob":-0.5,"bytes":[108,111],"top_logprobs":[{"token":"lo","logprob":-0.5,"bytes":[108,111]}]}]}}`,
	}
	for i, e := range events {
		b, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want[i] {
			t.Errorf("event %d:\n got %s\nwant %s", i, b, want[i])
		}
		var typ struct{ Type string }
		_ = json.Unmarshal(b, &typ)
		if typ.Type != e.Name {
			t.Errorf("event %d named %q, type %q", i, e.Name, typ.Type)
		}
	}
}

func TestChatShapes(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"message with reasoning", wire.NewResponseMessage("4", "2+2", nil),
			`{"role":"assistant","content":"4","reasoning_content":"2+2","reasoning":"2+2","refusal":null}`},
		{"calls only", wire.NewResponseMessage("", "", []wire.ToolCall{{ID: "call_1", Type: "function", Function: wire.FunctionCall{Name: "f", Arguments: "{}"}}}),
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}],"refusal":null}`},
		{"empty answer", wire.NewResponseMessage("", "", nil), `{"role":"assistant","content":"","refusal":null}`},
		{"first call delta", wire.ToolCallStart(0, "call_1", "f"), `{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}`},
		{"argument delta", wire.ToolCallArguments(0, `{"a`), `{"index":0,"function":{"arguments":"{\"a"}}`},
		{"usage chunk", wire.NewChunkEncoder("c", "m", 1).UsageChunk(wire.NewUsage(10, 4, 3)),
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}}}`},
		{"finish chunk", wire.NewChunkEncoder("c", "m", 1).Chunk(wire.Delta{}, wire.FinishToolCalls),
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}`},
		{"error body", (&wire.Error{Status: 400, ErrCode: wire.CodeUnsupportedParameter, Param: "n", Message: "no"}).Body(),
			`{"error":{"message":"no","type":"invalid_request_error","code":"unsupported_parameter","param":"n"}}`},
		{"server error body", wire.NewErrorBody(503, "server_busy", "", "busy"),
			`{"error":{"message":"busy","type":"server_error","code":"server_busy","param":null}}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", c.name, b, err, c.want)
		}
	}
}

func TestResponsesChatRequest(t *testing.T) {
	req, err := wire.DecodeResponses([]byte(`{
		"model": "m", "input": "hi", "instructions": "be brief", "stream": true,
		"tools": [{"type": "function", "name": "get", "description": "d", "parameters": {"type": "object"}, "strict": true}],
		"tool_choice": "required", "parallel_tool_calls": false, "max_output_tokens": 7, "temperature": 0.5, "top_p": 0.9,
		"text": {"format": {"type": "json_object"}}, "reasoning": {"effort": "low", "summary": "auto"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := req.ChatRequest()
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "m" || len(c.Messages) != 2 || c.Messages[0].Role != "system" || c.Messages[1].Content.String() != "hi" {
		t.Errorf("messages %+v", c.Messages)
	}
	if len(c.Tools) != 1 || c.Tools[0].Function.Name != "get" || !strings.Contains(string(c.Tools[0].Raw), `"function":{"name":"get"`) {
		t.Errorf("tools %+v", c.Tools)
	}
	if string(c.ToolChoice) != `"required"` || *c.ParallelToolCalls || c.Limit() != 7 || *c.Temperature != 0.5 || *c.TopP != 0.9 ||
		c.ResponseFormat.Type != "json_object" || c.ReasoningEffort != "low" || !c.Stream {
		t.Errorf("chat form %+v", c)
	}
}

// Log-probabilities are asked for by include or by top_logprobs above 0;
// the chat form then has logprobs: true and the same top_logprobs.
func TestResponsesLogprobs(t *testing.T) {
	for _, c := range []struct {
		body  string
		param string // LogprobsParam; "" for not asked
		top   int
	}{
		{`{"model":"m","input":"hi"}`, "", 0},
		{`{"model":"m","input":"hi","top_logprobs":0}`, "", 0},
		{`{"model":"m","input":"hi","include":["reasoning.encrypted_content"]}`, "", 0},
		{`{"model":"m","input":"hi","include":["reasoning.encrypted_content","message.output_text.logprobs"]}`, "include[1]", 0},
		{`{"model":"m","input":"hi","include":["message.output_text.logprobs"],"top_logprobs":0}`, "include[0]", 0},
		{`{"model":"m","input":"hi","top_logprobs":3}`, "top_logprobs", 3},
		{`{"model":"m","input":"hi","top_logprobs":20,"include":["message.output_text.logprobs"]}`, "include[0]", 20},
	} {
		req, err := wire.DecodeResponses([]byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		chat, err := req.ChatRequest()
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		top := 0
		if chat.TopLogprobs != nil {
			top = *chat.TopLogprobs
		}
		if req.LogprobsParam() != c.param || req.WantsLogprobs() != (c.param != "") || chat.Logprobs != (c.param != "") ||
			top != c.top || !chat.Logprobs && chat.TopLogprobs != nil {
			t.Errorf("%s: param %q, chat logprobs %v top %v", c.body, req.LogprobsParam(), chat.Logprobs, chat.TopLogprobs)
		}
		if r := wire.NewResponse("resp_1", 1, req); !reflect.DeepEqual(r.TopLogprobs, req.TopLogprobs) {
			t.Errorf("%s: response echoes top_logprobs %v", c.body, r.TopLogprobs)
		}
	}
}

func TestResponsesParam(t *testing.T) {
	for chat, want := range map[string]string{
		"messages":                           "input",
		"messages[3].content":                "input",
		"response_format":                    "text.format",
		"response_format.json_schema.schema": "text.format.schema",
		"max_tokens":                         "max_output_tokens",
		"max_completion_tokens":              "max_output_tokens",
		"reasoning_effort":                   "reasoning.effort",
		"tools[2].function.parameters":       "tools[2].parameters",
		"tools[0].function":                  "tools[0]",
		"tools":                              "tools",
		"tool_choice":                        "tool_choice",
		"temperature":                        "temperature",
		"":                                   "",
	} {
		if got := wire.ResponsesParam(chat); got != want {
			t.Errorf("ResponsesParam(%q) = %q, want %q", chat, got, want)
		}
	}
}

// A call joins the assistant text before it, as one turn does in the chat
// form; a turn of calls alone has empty text content.
func TestResponsesMessagesFoldCalls(t *testing.T) {
	req, err := wire.DecodeResponses([]byte(`{"model": "m", "input": [
		{"role": "user", "content": "weather?"},
		{"type": "reasoning", "content": [{"type": "reasoning_text", "text": "check"}]},
		{"role": "assistant", "content": "Let me check."},
		{"type": "function_call", "call_id": "call_1", "name": "get", "arguments": "{}"},
		{"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
		{"type": "function_call", "call_id": "call_2", "name": "get", "arguments": "{}"}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := req.Messages()
	if len(msgs) != 4 {
		t.Fatalf("messages %+v", msgs)
	}
	turn := msgs[1]
	if turn.Content.String() != "Let me check." || len(turn.ToolCalls) != 1 || turn.ReasoningContent == nil || *turn.ReasoningContent != "check" {
		t.Errorf("assistant turn %+v", turn)
	}
	if last := msgs[3]; last.Role != "assistant" || last.Content.Kind != wire.ContentString || last.Content.Text != "" || len(last.ToolCalls) != 1 {
		t.Errorf("calls-only turn %+v", last)
	}
}
