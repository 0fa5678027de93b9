//go:build cgo

package main

// Runaway answers through the built binary and the official openai-go
// client: a repeated tool call, a call the token limit cuts and a long
// repeating cycle end early, the same way streamed or not, on chat
// completions and the Responses API.

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// repeatedCalls is a model caught in a loop: the same call five times.
var repeatedCalls = strings.TrimSuffix(strings.Repeat(toolAnswer+"\n", 5), "\n")

// cycleAnswer repeats a sentence of about a hundred tokens twelve times:
// a cycle longer than the 64 tokens a short-period guard would see.
var cycleAnswer = strings.Repeat("Check the alpha module, then the bravo queue, the charlie index, the delta cache, "+
	"the echo buffer, the foxtrot lock, the golf table, the hotel pool, the india stream, the juliet worker, "+
	"the kilo timer, the lima socket and the mike ledger before the november release. ", 12)

func sdk(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
}

func weatherTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"city"}},
	})}
}

func weatherFunctions() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name: "get_weather", Strict: openai.Bool(false),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}}}
}

func ask(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Tools: weatherTools(),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}}
}

func askResponses(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: model, Tools: weatherFunctions(),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")}}
}

// chatBoth answers params non-streamed and streamed (joined by the SDK's
// accumulator); a streamed answer must carry no content delta when want
// has no content.
func chatBoth(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams, opts ...option.RequestOption) [2]openai.ChatCompletionChoice {
	t.Helper()
	resp, err := c.Chat.Completions.New(t.Context(), params, opts...)
	if err != nil {
		t.Fatal(err)
	}
	stream := c.Chat.Completions.NewStreaming(t.Context(), params, opts...)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return [2]openai.ChatCompletionChoice{resp.Choices[0], acc.Choices[0]}
}

func TestRunawayAnswers(t *testing.T) {
	p := startServe(t, "-models-dir", models.Path(t), "-ollama", "off")
	c := sdk(p.url)

	t.Run("repeated-call", func(t *testing.T) {
		for i, ch := range chatBoth(t, c, ask("calls-loop")) {
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 2 || ch.Message.Content != "" {
				t.Errorf("streamed %v: finish %s, %d calls, content %q; want tool_calls, 2, none", i == 1, ch.FinishReason, len(ch.Message.ToolCalls), ch.Message.Content)
			}
		}
		allow := option.WithJSONSet("allow_repeated_calls", true)
		for i, ch := range chatBoth(t, c, ask("calls-loop"), allow) {
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 5 {
				t.Errorf("allowed, streamed %v: finish %s, %d calls; want 5", i == 1, ch.FinishReason, len(ch.Message.ToolCalls))
			}
		}
		for _, stream := range []bool{false, true} {
			r := respond(t, c, askResponses("calls-loop"), stream)
			if n := countItems(r, "function_call"); r.Status != "completed" || n != 2 {
				t.Errorf("responses, streamed %v: status %s, %d calls; want completed, 2", stream, r.Status, n)
			}
		}
		// The log arrives through a pipe: give its last lines a moment.
		const warning = "the answer stopped at tool call 1: it repeats call 0 (get_weather with the same arguments)"
		n := 0
		for end := time.Now().Add(5 * time.Second); n != 4 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			n = strings.Count(p.Stderr(), warning)
		}
		if n != 4 {
			t.Errorf("%d warnings naming the repeated call, want 4 (chat and responses, streamed and not):\n%s", n, p.Stderr())
		}
	})

	t.Run("call-cut-by-length", func(t *testing.T) {
		params := ask("tool")
		params.MaxCompletionTokens = openai.Int(14)
		for i, ch := range chatBoth(t, c, params) {
			calls := ch.Message.ToolCalls
			if ch.FinishReason != "length" || len(calls) != 1 || calls[0].Function.Name != "get_weather" || ch.Message.Content != "" {
				t.Errorf("streamed %v: finish %s, calls %+v, content %q; want length, the cut call, no content", i == 1, ch.FinishReason, calls, ch.Message.Content)
				continue
			}
			if args := calls[0].Function.Arguments; args == "" || json.Valid([]byte(args)) || !strings.Contains(toolAnswer, args) {
				t.Errorf("streamed %v: arguments %q, want a cut prefix of the call's", i == 1, args)
			}
		}
		rp := askResponses("tool")
		rp.MaxOutputTokens = openai.Int(14)
		for _, stream := range []bool{false, true} {
			r := respond(t, c, rp, stream)
			if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || countItems(r, "function_call") != 1 || countItems(r, "message") != 0 {
				t.Errorf("responses, streamed %v: %s", stream, r.RawJSON())
			}
		}
	})

	t.Run("long-cycle", func(t *testing.T) {
		params := openai.ChatCompletionNewParams{Model: "cycle", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Plan.")}}
		script := len(cycleAnswer) / 4 // well below the script's token count
		for i, ch := range chatBoth(t, c, params) {
			if ch.FinishReason != "length" || len(ch.Message.Content) >= len(cycleAnswer) || len(ch.Message.Content) < script {
				t.Errorf("streamed %v: finish %s after %d of %d bytes; want length, cut by the guard", i == 1, ch.FinishReason, len(ch.Message.Content), len(cycleAnswer))
			}
		}
		if _, err := p.WaitLine(regexp.MustCompile(`level=WARN msg="generation stopped: repeating token cycle"`), 5*time.Second); err != nil {
			t.Errorf("no loop guard warning:\n%s", p.Stderr())
		}
	})
}

// respond answers params through the Responses API, streamed or not; a
// streamed answer is the response its last event holds.
func respond(t *testing.T, c openai.Client, params responses.ResponseNewParams, stream bool) responses.Response {
	t.Helper()
	if !stream {
		r, err := c.Responses.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		return *r
	}
	s := c.Responses.NewStreaming(t.Context(), params)
	var last responses.Response
	for s.Next() {
		if e := s.Current(); e.Type == "response.completed" || e.Type == "response.incomplete" {
			last = e.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return last
}

func countItems(r responses.Response, kind string) int {
	n := 0
	for _, it := range r.Output {
		if it.Type == kind {
			n++
		}
	}
	return n
}

// Every endpoint answers a field it does not know with unknown_parameter
// naming it, and a method it does not serve with 405 and Allow, as the
// chat endpoints do.
func TestErrorShape(t *testing.T) {
	p := startServe(t, "-models-dir", models.Path(t), "-ollama", "off")
	for _, path := range []string{"/tokenize", "/detokenize", "/apply-template", "/v1/unload", "/v1/chat/completions"} {
		body := `{"model":"think","bogus":1}`
		if path == "/v1/unload" { // it takes no keys at all
			body = `{"bogus":1}`
		}
		resp, err := http.Post(p.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error struct{ Code, Param string } }
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Error.Code != "unknown_parameter" || e.Error.Param != "bogus" || err != nil {
			t.Errorf("POST %s with an unknown field: %s %+v (%v)", path, resp.Status, e, err)
		}
	}
	for _, path := range []string{"/tokenize", "/v1/unload", "/v1/chat/completions"} {
		resp, err := http.Get(p.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
			t.Errorf("GET %s: %s, Allow %q; want 405 and POST", path, resp.Status, resp.Header.Get("Allow"))
		}
	}
}

// A client that leaves mid-stream is no error: the built server logs one
// INFO line naming the answer, and nothing at WARN or ERROR.
func TestClientLeavesMidStream(t *testing.T) {
	p := startServe(t, "-models-dir", models.Path(t), "-ollama", "off")
	body := `{"model":"count","stream":true,"messages":[{"role":"user","content":"Count."}]}`
	resp, err := http.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if _, err := resp.Body.Read(buf); err != nil || !strings.Contains(string(buf), "data: ") {
		t.Fatalf("first read %q: %v", buf, err)
	}
	resp.Body.Close()
	if _, err := p.WaitLine(regexp.MustCompile(`level=INFO msg="client left mid-stream" id=chatcmpl-`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if log := p.Stderr(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") {
		t.Errorf("a client leaving logged a warning or an error:\n%s", log)
	}
}
