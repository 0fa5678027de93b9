package wire_test

// The official openai-go client against the wire types: what it sends must
// decode with the strict decoders, and what the types and the sse writer
// send must parse, streamed and not, with the client's own accumulator.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism/internal/app/sse"
	"github.com/prism-local/prism/internal/app/wire"
)

// fakeServer answers with canned output built from the wire types and
// records every decoding error.
type fakeServer struct {
	t    *testing.T
	mu   sync.Mutex
	errs []error
	chat []*wire.ChatRequest
	resp []*wire.ResponsesRequest
}

func (f *fakeServer) fail(err error) {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := wire.ReadBody(r.Body)
	if err != nil {
		f.fail(err)
		return
	}
	path := r.URL.Path
	if r.Header.Get("X-Fail") != "" {
		path += "/fail"
	}
	switch path {
	case "/v1/chat/completions/fail":
		// A failure after the headers went out: the error body as a data
		// event, then the end of the stream.
		s, err := sse.Start(w)
		if err == nil {
			enc := wire.NewChunkEncoder("chatcmpl-1", "m", 1)
			_ = s.Data(enc.AppendContent(nil, "Hel"))
			_ = s.JSON(wire.NewErrorBody(500, "model_load_failed", "", "the runtime failed"))
			err = s.Done()
		}
		if err != nil {
			f.fail(err)
		}
	case "/v1/chat/completions":
		req, err := wire.DecodeChat(body)
		if err != nil {
			f.fail(err)
			writeJSON(w, err.(*wire.Error).Status, err.(*wire.Error).Body())
			return
		}
		f.mu.Lock()
		f.chat = append(f.chat, req)
		f.mu.Unlock()
		if req.Stream {
			f.streamChat(w, req)
			return
		}
		calls := []wire.ToolCall{{ID: "call_0", Type: "function", Function: wire.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}
		writeJSON(w, 200, wire.ChatCompletion{ID: "chatcmpl-1", Object: "chat.completion", Created: 1, Model: req.Model,
			Choices: []wire.Choice{{Message: wire.NewResponseMessage("Hello world", "thinking", calls), FinishReason: wire.FinishToolCalls}},
			Usage:   wire.NewUsage(10, 4, 5)})
	case "/v1/responses":
		req, err := wire.DecodeResponses(body)
		if err != nil {
			f.fail(err)
			writeJSON(w, err.(*wire.Error).Status, err.(*wire.Error).Body())
			return
		}
		f.mu.Lock()
		f.resp = append(f.resp, req)
		f.mu.Unlock()
		f.respond(w, req)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeServer) streamChat(w http.ResponseWriter, req *wire.ChatRequest) {
	s, err := sse.Start(w)
	if err != nil {
		f.fail(err)
		return
	}
	enc := wire.NewChunkEncoder("chatcmpl-1", req.Model, 1)
	var buf []byte
	_ = s.JSON(enc.Chunk(wire.Delta{Role: "assistant"}, ""))
	for _, p := range []string{"think", "ing"} {
		buf = enc.AppendReasoning(buf[:0], p)
		_ = s.Data(buf)
	}
	for _, p := range []string{"Hello", " world"} {
		buf = enc.AppendContent(buf[:0], p)
		_ = s.Data(buf)
	}
	_ = s.JSON(enc.Chunk(wire.Delta{ToolCalls: []wire.ToolCallDelta{wire.ToolCallStart(0, "call_0", "get_weather")}}, ""))
	for _, frag := range []string{`{"ci`, `ty":"Pa`, `ris"}`} {
		_ = s.JSON(enc.Chunk(wire.Delta{ToolCalls: []wire.ToolCallDelta{wire.ToolCallArguments(0, frag)}}, ""))
	}
	_ = s.JSON(enc.Chunk(wire.Delta{}, wire.FinishToolCalls))
	if req.IncludeUsage() {
		_ = s.JSON(enc.UsageChunk(wire.NewUsage(10, 4, 5)))
	}
	if err := s.Done(); err != nil {
		f.fail(err)
	}
}

func (f *fakeServer) respond(w http.ResponseWriter, req *wire.ResponsesRequest) {
	r := wire.NewResponse("resp_1", 1, req)
	reasoning := wire.OutputItem{Type: wire.ItemReasoning, ID: "rs_1", Content: []wire.OutputPart{{Type: "reasoning_text", Text: "thinking"}}}
	msg := wire.OutputItem{Type: wire.ItemMessage, ID: "msg_1", Status: wire.StatusCompleted, Content: []wire.OutputPart{{Type: "output_text", Text: "Hello world"}}}
	call := wire.OutputItem{Type: wire.ItemFunctionCall, ID: "fc_1", Status: wire.StatusCompleted, CallID: "call_0", Name: "get_weather", Arguments: `{"city":"Paris"}`}
	if !req.Stream {
		r.Status, r.Output, r.Usage = wire.StatusCompleted, []wire.OutputItem{reasoning, msg, call}, wire.NewResponseUsage(10, 4, 5, 1)
		writeJSON(w, 200, r)
		return
	}
	s, err := sse.Start(w)
	if err != nil {
		f.fail(err)
		return
	}
	var seq wire.EventSeq
	send := func(e wire.Event) {
		if err := s.EventJSON(e.Name, e.Data); err != nil {
			f.fail(err)
		}
	}
	send(seq.Lifecycle(wire.EventCreated, r))
	send(seq.Lifecycle(wire.EventInProgress, r))
	open := reasoning
	open.Content, open.Status = nil, wire.StatusInProgress
	send(seq.Item(wire.EventItemAdded, 0, open))
	send(seq.TextDelta(wire.EventReasoningDelta, "rs_1", 0, 0, "think", nil))
	send(seq.TextDelta(wire.EventReasoningDelta, "rs_1", 0, 0, "ing", nil))
	send(seq.TextDone(wire.EventReasoningDone, "rs_1", 0, 0, "thinking", nil))
	send(seq.Item(wire.EventItemDone, 0, reasoning))
	open = msg
	open.Content, open.Status = nil, wire.StatusInProgress
	send(seq.Item(wire.EventItemAdded, 1, open))
	send(seq.Part(wire.EventPartAdded, "msg_1", 1, 0, wire.OutputPart{Type: "output_text"}))
	send(seq.TextDelta(wire.EventTextDelta, "msg_1", 1, 0, "Hello", nil))
	send(seq.TextDelta(wire.EventTextDelta, "msg_1", 1, 0, " world", nil))
	send(seq.TextDone(wire.EventTextDone, "msg_1", 1, 0, "Hello world", nil))
	send(seq.Part(wire.EventPartDone, "msg_1", 1, 0, msg.Content[0]))
	send(seq.Item(wire.EventItemDone, 1, msg))
	open = call
	open.Arguments, open.Status = "", wire.StatusInProgress
	send(seq.Item(wire.EventItemAdded, 2, open))
	send(seq.ArgumentsDelta("fc_1", 2, `{"city":`))
	send(seq.ArgumentsDelta("fc_1", 2, `"Paris"}`))
	send(seq.ArgumentsDone("fc_1", 2, "get_weather", `{"city":"Paris"}`))
	send(seq.Item(wire.EventItemDone, 2, call))
	r.Status, r.Output, r.Usage = wire.StatusCompleted, []wire.OutputItem{reasoning, msg, call}, wire.NewResponseUsage(10, 4, 5, 1)
	send(seq.Lifecycle(wire.EventCompleted, r))
}

func newClient(t *testing.T) (openai.Client, *fakeServer) {
	t.Helper()
	f := &fakeServer{t: t}
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		srv.Close()
		for _, err := range f.errs {
			t.Errorf("server side: %v", err)
		}
	})
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0)), f
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "qwen",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"), openai.DeveloperMessage("use tools"),
			openai.UserMessage("weather in Paris?"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Description: openai.String("weather of a city"), Strict: openai.Bool(true),
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
		ToolChoice:          openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}),
		ParallelToolCalls:   openai.Bool(false),
		MaxCompletionTokens: openai.Int(64),
		Temperature:         openai.Float(0.5),
		TopP:                openai.Float(0.9),
		Seed:                openai.Int(7),
		FrequencyPenalty:    openai.Float(0),
		PresencePenalty:     openai.Float(0),
		Logprobs:            openai.Bool(true),
		TopLogprobs:         openai.Int(2),
		Stop:                openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"END"}},
		ReasoningEffort:     shared.ReasoningEffortLow,
		User:                openai.String("u"),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "out", Schema: map[string]any{"type": "object"}, Strict: openai.Bool(true)},
		}},
	}
}

func TestOpenAIGoChat(t *testing.T) {
	client, f := newClient(t)
	params := chatParams()
	resp, err := client.Chat.Completions.New(t.Context(), params, option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": true}))
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Choices[0].Message
	if m.Content != "Hello world" || resp.Choices[0].FinishReason != "tool_calls" || len(m.ToolCalls) != 1 ||
		m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || resp.Usage.PromptTokensDetails.CachedTokens != 4 {
		t.Errorf("response %s", resp.RawJSON())
	}
	if rc := m.JSON.ExtraFields["reasoning_content"]; rc.Raw() != `"thinking"` {
		t.Errorf("reasoning_content %q", rc.Raw())
	}
	// The assistant message goes back as the client converts it, followed by
	// the tool's answer.
	params.Messages = append(params.Messages, m.ToParam(), openai.ToolMessage("sunny", "call_0"))
	if _, err := client.Chat.Completions.New(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	got := f.chat[1]
	if len(got.Messages) != 5 || got.Messages[3].Role != "assistant" || got.Messages[3].ToolCalls[0].ID != "call_0" ||
		got.Messages[4].ToolCallID != "call_0" || string(got.TemplateKwargs()["enable_thinking"]) != "" {
		t.Errorf("second request decoded as %+v", got)
	}
	if kw := f.chat[0].TemplateKwargs(); string(kw["enable_thinking"]) != "true" {
		t.Errorf("chat_template_kwargs %v", kw)
	}
	if got.ResponseFormat == nil || got.ResponseFormat.JSONSchema.Name != "out" || got.Limit() != 64 || *got.Seed != 7 {
		t.Errorf("parameters decoded as %+v", got)
	}
}

func TestOpenAIGoChatStream(t *testing.T) {
	client, f := newClient(t)
	params := chatParams()
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	finished := 0
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		if len(c.Choices) > 0 {
			var d struct {
				ReasoningContent string `json:"reasoning_content"`
			}
			_ = json.Unmarshal([]byte(c.Choices[0].Delta.RawJSON()), &d)
			reasoning.WriteString(d.ReasoningContent)
		}
		if _, ok := acc.JustFinishedToolCall(); ok {
			finished++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !f.chat[0].IncludeUsage() {
		t.Error("include_usage not decoded")
	}
	m := acc.Choices[0].Message
	if m.Content != "Hello world" || reasoning.String() != "thinking" || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("accumulated %+v, reasoning %q", acc.ChatCompletion, reasoning.String())
	}
	if len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_0" || m.ToolCalls[0].Function.Name != "get_weather" || !json.Valid([]byte(m.ToolCalls[0].Function.Arguments)) ||
		m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || finished != 1 {
		t.Errorf("tool call %+v (finished %d)", m.ToolCalls, finished)
	}
	if acc.Usage.TotalTokens != 15 || acc.Usage.PromptTokensDetails.CachedTokens != 4 {
		t.Errorf("usage %+v", acc.Usage)
	}
}

func responseParams() responses.ResponseNewParams {
	output := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
	output.OfFunctionCallOutput.CallID = openai.String("call_0")
	return responses.ResponseNewParams{
		Model:        "qwen",
		Instructions: openai.String("be brief"),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("weather in Paris?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(`{"city":"Paris"}`, "call_0", "get_weather"),
			output,
		}},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name: "get_weather", Strict: openai.Bool(true), Parameters: map[string]any{"type": "object"},
		}}},
		ToolChoice:      responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
		MaxOutputTokens: openai.Int(64),
		Temperature:     openai.Float(0.2),
		Store:           openai.Bool(false),
		Reasoning:       shared.ReasoningParam{Effort: shared.ReasoningEffortHigh},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("out",
			map[string]any{"type": "object"})},
	}
}

func TestOpenAIGoResponses(t *testing.T) {
	client, f := newClient(t)
	resp, err := client.Responses.New(t.Context(), responseParams())
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Hello world" || resp.Status != "completed" || len(resp.Output) != 3 ||
		resp.Output[2].Type != "function_call" || resp.Output[2].Arguments.OfString != `{"city":"Paris"}` || resp.Usage.InputTokensDetails.CachedTokens != 4 {
		t.Errorf("response %s", resp.RawJSON())
	}
	if r := resp.Output[0].AsReasoning(); len(r.Content) != 1 || r.Content[0].Text != "thinking" {
		t.Errorf("reasoning item %+v", r)
	}
	req := f.resp[0]
	msgs := req.Messages()
	if len(msgs) != 4 || msgs[0].Role != "system" || msgs[2].ToolCalls[0].ID != "call_0" || msgs[3].Content.String() != "sunny" {
		t.Errorf("messages %+v", msgs)
	}
	if choice, _ := req.ChatToolChoice(); string(choice) != `{"function":{"name":"get_weather"},"type":"function"}` {
		t.Errorf("tool choice %s", choice)
	}
	// The stateless server refuses what needs a stored response, and the
	// client shows the error body as sent.
	params := responseParams()
	params.PreviousResponseID = openai.String("resp_0")
	_, err = client.Responses.New(t.Context(), params)
	var apiErr *openai.Error
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != wire.CodeUnsupportedParameter || apiErr.Param != "previous_response_id" {
		t.Errorf("previous_response_id: %v", err)
	}
	f.errs = nil // that refusal was the point
}

func asAPIError(err error, target **openai.Error) bool {
	e, ok := err.(*openai.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestOpenAIGoResponsesStream(t *testing.T) {
	client, _ := newClient(t)
	params := responseParams()
	stream := client.Responses.NewStreaming(t.Context(), params)
	var types []string
	var text, thinking, args strings.Builder
	var final responses.Response
	seq := int64(0)
	for stream.Next() {
		e := stream.Current()
		types = append(types, e.Type)
		if e.SequenceNumber != seq {
			t.Errorf("event %s has sequence number %d, want %d", e.Type, e.SequenceNumber, seq)
		}
		seq++
		switch e.Type {
		case "response.output_text.delta":
			text.WriteString(e.AsResponseOutputTextDelta().Delta)
		case "response.reasoning_text.delta":
			thinking.WriteString(e.AsResponseReasoningTextDelta().Delta)
		case "response.function_call_arguments.delta":
			args.WriteString(e.AsResponseFunctionCallArgumentsDelta().Delta)
		case "response.completed":
			final = e.AsResponseCompleted().Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Hello world" || thinking.String() != "thinking" || args.String() != `{"city":"Paris"}` {
		t.Errorf("text %q thinking %q args %q", text.String(), thinking.String(), args.String())
	}
	if final.OutputText() != "Hello world" || final.Status != "completed" || types[0] != "response.created" || types[1] != "response.in_progress" {
		t.Errorf("events %q, final %s", types, final.RawJSON())
	}
}

// A failure after the headers is an error body sent as a data event; the
// client ends the stream with it.
func TestOpenAIGoStreamError(t *testing.T) {
	client, _ := newClient(t)
	stream := client.Chat.Completions.NewStreaming(t.Context(), chatParams(), option.WithHeader("X-Fail", "1"))
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	err := stream.Err()
	if err == nil || !strings.Contains(err.Error(), "the runtime failed") || text.String() != "Hel" {
		t.Errorf("text %q, err %v", text.String(), err)
	}
}
