//go:build cgo

package server_test

// The Ollama backend through the running server, with openai-go, against
// ollamatest: a fake daemon on loopback speaking Ollama's wire format.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/engine/ollama/ollamatest"
	"github.com/prism-local/prism/internal/app/server"
)

var ollamaModels = []ollamatest.Model{
	{Name: "qwen3:0.6b", Answer: ollamatest.Answer{PromptTokens: 11, CompletionTokens: 6, Chunks: []ollama.Chunk{
		{Thinking: "The user"}, {Thinking: " greets me."}, {Content: "Hello"}, {Content: " there,"}, {Content: " friend."}}}},
	{Name: "r1:latest", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{{Content: "<think>hm</th"}, {Content: "ink>Sure."}}}},
	{Name: "llama3.2:3b", Answer: ollamatest.Answer{PromptTokens: 30, CompletionTokens: 9, Chunks: []ollama.Chunk{
		{ToolCalls: []ollama.ToolCall{{Function: ollama.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)}}}}}}},
	{Name: "nomic-embed-text:latest", Dims: 6},
	{Name: "broken:1b", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{{Content: "a"}, {Content: "b"}}, Fail: ollamatest.ErrorLine, FailAfter: 1}},
	{Name: "cut:1b", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{{Content: "a"}, {Content: "b"}}, Fail: ollamatest.Cut, FailAfter: 1}},
	{Name: "slow:1b", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{{Content: "a"}, {Content: "b"}}, Fail: ollamatest.Hang, FailAfter: 1}},
	{Name: "think", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{{Content: "from Ollama"}}}}, // the ONNX model's name
}

func withOllama(t *testing.T) (*testServer, *ollamatest.Server) {
	t.Helper()
	fake := ollamatest.New(t, ollamaModels...)
	client, err := ollama.New(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	return start(t, nil, func(c *server.Config) { c.Ollama = client }), fake
}

func TestOllamaChatStreamedAndNot(t *testing.T) {
	ts, fake := withOllama(t)
	for _, model := range []string{"qwen3:0.6b", "r1"} { // "r1" is r1:latest, as Ollama resolves it
		resp, err := ts.client.Chat.Completions.New(t.Context(), hello(model))
		if err != nil {
			t.Fatal(err)
		}
		msg := resp.Choices[0].Message
		raw := msg.RawJSON()
		stream := ts.client.Chat.Completions.NewStreaming(t.Context(), hello(model))
		var content, thinking, thinking2 string
		for stream.Next() {
			for _, c := range stream.Current().Choices {
				content += c.Delta.Content
				thinking += extra(c.Delta.RawJSON(), "reasoning_content")
				thinking2 += extra(c.Delta.RawJSON(), "reasoning")
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if content != msg.Content || thinking != extra(raw, "reasoning_content") || thinking2 != thinking || extra(raw, "reasoning") != thinking {
			t.Errorf("%s: streamed %q / %q, non-streamed %s", model, content, thinking, raw)
		}
		if resp.Choices[0].FinishReason != "stop" || resp.Model != model {
			t.Errorf("%s: %s", model, resp.RawJSON())
		}
	}
	resp, err := ts.client.Chat.Completions.New(t.Context(), hello("qwen3:0.6b"))
	if err != nil {
		t.Fatal(err)
	}
	if m := resp.Choices[0].Message; m.Content != "Hello there, friend." || extra(m.RawJSON(), "reasoning_content") != "The user greets me." ||
		resp.Usage.PromptTokens != 11 || resp.Usage.CompletionTokens != 6 || resp.Usage.TotalTokens != 17 {
		t.Errorf("answer %s", resp.RawJSON())
	}
	var sent struct {
		Model    string
		Stream   bool
		Messages []map[string]any
	}
	chats := fake.Chats()
	if err := json.Unmarshal(chats[2], &sent); err != nil || sent.Model != "r1:latest" || !sent.Stream || sent.Messages[0]["content"] != "Hi!" {
		t.Errorf("Ollama got %s (%v)", chats[2], err)
	}
}

func TestOllamaRequestMapping(t *testing.T) {
	ts, fake := withOllama(t)
	body := `{"model":"qwen3:0.6b","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"wea"},{"type":"text","text":"ther?"}]},
		{"role":"assistant","content":null,"reasoning_content":"look it up","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"21C"}],
		"temperature":0,"top_p":0.9,"seed":3,"max_tokens":50,"stop":["\n\n"],"frequency_penalty":0.5,"repetition_penalty":1.1,
		"response_format":{"type":"json_object"},"reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":true}}`
	resp, out := post(t, ts, body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %v", resp.StatusCode, out)
	}
	var got struct {
		Messages []ollama.Message `json:"messages"`
		Options  map[string]any   `json:"options"`
		Format   string           `json:"format"`
		Think    string           `json:"think"`
	}
	if err := json.Unmarshal(fake.Chats()[0], &got); err != nil {
		t.Fatal(err)
	}
	m := got.Messages
	if len(m) != 4 || m[0].Role != "system" || m[1].Content != "weather?" || m[2].Thinking != "look it up" ||
		string(m[2].ToolCalls[0].Function.Arguments) != `{"city":"Paris"}` || m[3].ToolName != "get_weather" {
		t.Errorf("messages %+v", m)
	}
	o := got.Options
	if o["temperature"] != 0.0 || o["top_p"] != 0.9 || o["seed"] != 3.0 || o["num_predict"] != 50.0 || o["frequency_penalty"] != 0.5 ||
		o["repeat_penalty"] != 1.1 || got.Format != "json" || got.Think != "high" {
		t.Errorf("options %v format %q think %q", o, got.Format, got.Think)
	}
	resp, out = post(t, ts, `{"model":"qwen3:0.6b","messages":[{"role":"user","content":"x"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"city","schema":{"type":"object","properties":{"city":{"type":"string"}}}}}}`, nil)
	var schema struct {
		Format map[string]any `json:"format"`
	}
	if err := json.Unmarshal(fake.Chats()[1], &schema); resp.StatusCode != 200 || err != nil || schema.Format["type"] != "object" {
		t.Errorf("json_schema: %d %v, sent %s", resp.StatusCode, out, fake.Chats()[1])
	}
	for _, tc := range []struct{ body, code, param string }{
		{`{"model":"qwen3:0.6b","messages":[{"role":"user","content":"x"}],"logprobs":true}`, "unsupported_parameter", "logprobs"},
		{`{"model":"qwen3:0.6b","messages":[{"role":"user","content":"x"}],"reasoning_effort":"xhigh"}`, "unsupported_parameter", "reasoning_effort"},
		{`{"model":"qwen3:0.6b","messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"foo":1}}`, "unsupported_parameter", "chat_template_kwargs"},
		{`{"model":"qwen3:0.6b","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
			"invalid_request_error", "messages[0].tool_calls[0].function.arguments"},
		{`{"model":"qwen3:0.6b","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`,
			"tool_choice_unsatisfied", "tool_choice"},
	} {
		resp, out := post(t, ts, tc.body, nil)
		if code, param := errorOf(out); resp.StatusCode != 400 || code != tc.code || param != tc.param {
			t.Errorf("%s: status %d %v", tc.body, resp.StatusCode, out)
		}
	}
	// The endpoints that serve ONNX models only say so for an Ollama name.
	for path, body := range map[string]string{
		"/v1/completions": `{"model":"qwen3:0.6b","prompt":"x"}`,
		"/tokenize":       `{"model":"qwen3:0.6b","content":"x"}`,
	} {
		resp, out := postTo(t, ts, path, body, nil)
		if code, param := errorOf(out); resp.StatusCode != 400 || code != "unsupported_model" || param != "model" {
			t.Errorf("%s: status %d %v", path, resp.StatusCode, out)
		}
	}
}

func TestOllamaToolCallStreamed(t *testing.T) {
	ts, _ := withOllama(t)
	params := hello("llama3.2:3b")
	params.Tools = weatherTool()
	resp, err := ts.client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if resp.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" {
		t.Fatalf("answer %s", resp.RawJSON())
	}
	stream := ts.client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	first := true
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		for _, ch := range c.Choices {
			for _, d := range ch.Delta.ToolCalls {
				if first && (d.ID == "" || d.Type != "function" || d.Function.Name != "get_weather" || d.Index != 0) {
					t.Errorf("first delta %s", d.RawJSON())
				}
				first = false
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	sc := acc.Choices[0].Message.ToolCalls
	var args map[string]string
	if len(sc) != 1 || acc.Choices[0].FinishReason != "tool_calls" || json.Unmarshal([]byte(sc[0].Function.Arguments), &args) != nil ||
		args["city"] != "Paris" || sc[0].Function.Arguments != calls[0].Function.Arguments {
		t.Fatalf("streamed %+v", sc)
	}
}

func TestOllamaEmbeddings(t *testing.T) {
	ts, _ := withOllama(t)
	resp, err := ts.client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{Model: "nomic-embed-text",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world!"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 2 || resp.Data[1].Index != 1 || resp.Data[0].Object != "embedding" || resp.Usage.PromptTokens != 2+2 {
		t.Fatalf("answer %s", resp.RawJSON())
	}
	want := ollamatest.Vector("world!", 6)
	for i, v := range resp.Data[1].Embedding {
		if float32(v) != want[i] {
			t.Fatalf("vector %v, want %v", resp.Data[1].Embedding, want)
		}
	}
	b64, out := postTo(t, ts, "/v1/embeddings", `{"model":"nomic-embed-text","input":"hello","encoding_format":"base64"}`, nil)
	if data, _ := out["data"].([]any); b64.StatusCode != 200 || len(data) != 1 {
		t.Fatalf("base64: %d %v", b64.StatusCode, out)
	}
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"model":"think","input":"x"}`, 400, "unsupported_model"},
		{`{"model":"nomic-embed-text","input":[1,2]}`, 400, "invalid_request_error"},
		{`{"model":"nope:1b","input":"x"}`, 404, "model_not_found"},
	} {
		resp, out := postTo(t, ts, "/v1/embeddings", tc.body, nil)
		if code, _ := errorOf(out); resp.StatusCode != tc.status || code != tc.code {
			t.Errorf("%s: %d %v", tc.body, resp.StatusCode, out)
		}
	}
}

func TestOllamaModelsBesideONNX(t *testing.T) {
	ts, fake := withOllama(t)
	list, err := ts.client.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, m := range list.Data {
		kinds[m.ID] = m.OwnedBy + "/" + extra(m.RawJSON(), "backend")
	}
	if kinds["think"] != "prism/onnx" || kinds["llama3.2:3b"] != "ollama/ollama" || kinds["nomic-embed-text:latest"] != "ollama/ollama" {
		t.Errorf("models %v", kinds)
	}
	m, err := ts.client.Models.Get(t.Context(), "llama3.2:3b")
	if err != nil || m.OwnedBy != "ollama" {
		t.Errorf("get: %+v %v", m, err)
	}
	// "think" is the ONNX model's id: it stays the ONNX model's.
	resp, err := ts.client.Chat.Completions.New(t.Context(), hello("think"))
	if err != nil || strings.Contains(resp.Choices[0].Message.Content, "from Ollama") {
		t.Errorf("think went to Ollama: %v %v", resp, err)
	}

	// Ollama goes away: once a request finds it gone, its models leave the
	// list and the ONNX ones stay.
	fake.Close()
	if _, err := ts.client.Chat.Completions.New(t.Context(), hello("qwen3:0.6b")); err == nil {
		t.Fatal("a chat with Ollama gone succeeded")
	}
	begin := time.Now()
	list, err = ts.client.Models.List(t.Context())
	if err != nil || len(list.Data) != 3 || time.Since(begin) > 3*time.Second {
		t.Errorf("with Ollama down: %d models after %s, %v", len(list.Data), time.Since(begin), err)
	}
}

func TestOllamaUnreachableIs502BeforeHeaders(t *testing.T) {
	ts, fake := withOllama(t)
	if _, err := ts.client.Models.List(t.Context()); err != nil { // the names are listed
		t.Fatal(err)
	}
	resp, out := post(t, ts, `{"model":"nope:7b","messages":[{"role":"user","content":"x"}]}`, nil)
	if code, _ := errorOf(out); resp.StatusCode != 404 || code != "model_not_found" || !strings.Contains(out["error"].(map[string]any)["message"].(string), "llama3.2:3b") {
		t.Errorf("unknown model: %d %v", resp.StatusCode, out)
	}
	fake.Close()
	for _, body := range []string{
		`{"model":"llama3.2:3b","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"llama3.2:3b","stream":true,"messages":[{"role":"user","content":"x"}]}`,
	} {
		resp, out := post(t, ts, body, nil)
		if code, _ := errorOf(out); resp.StatusCode != 502 || code != "backend_unavailable" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %v", body, resp.StatusCode, out)
		}
	}
	// A name Ollama never listed is not found, and the message says why
	// Ollama's models could not be checked.
	resp, out = post(t, ts, `{"model":"never-listed:1b","messages":[{"role":"user","content":"x"}]}`, nil)
	if code, _ := errorOf(out); resp.StatusCode != 404 || code != "model_not_found" ||
		!strings.Contains(out["error"].(map[string]any)["message"].(string), "is not answering") {
		t.Errorf("never listed: %d %v", resp.StatusCode, out)
	}
	// The server still serves: an ONNX model answers.
	if _, err := ts.client.Chat.Completions.New(t.Context(), hello("think")); err != nil {
		t.Fatal(err)
	}
}

// sse reads a streamed answer's data lines.
func sse(t *testing.T, ctx context.Context, ts *testServer, body string) []string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			lines = append(lines, d)
		}
	}
	return lines
}

func TestOllamaFailingMidStreamEndsWithAnErrorEvent(t *testing.T) {
	ts, _ := withOllama(t)
	for _, model := range []string{"broken:1b", "cut:1b"} {
		lines := sse(t, t.Context(), ts, `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"x"}]}`)
		last := lines[len(lines)-1]
		if len(lines) < 3 || !strings.Contains(lines[1], `"content":"a"`) || !strings.Contains(last, `"backend_unavailable"`) {
			t.Errorf("%s: events %q", model, lines)
		}
		stream := ts.client.Chat.Completions.NewStreaming(t.Context(), hello(model))
		for stream.Next() {
		}
		if stream.Err() == nil {
			t.Errorf("%s: openai-go saw no error", model)
		}
	}
	// A client that leaves a hanging answer ends it: nothing waits for Ollama.
	ctx, cancel := context.WithCancel(t.Context())
	stream := ts.client.Chat.Completions.NewStreaming(ctx, hello("slow:1b"))
	if !stream.Next() {
		t.Fatal(stream.Err())
	}
	cancel()
	for stream.Next() {
	}
	_ = stream.Close()
}

// Ollama requests do not wait for the Manager (spec I2): with the engine
// lock held, they are still answered.
func TestOllamaIsNotSerialisedByTheManager(t *testing.T) {
	ts, _ := withOllama(t)
	release := holdLock(t, ts)
	defer release()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := ts.client.Chat.Completions.New(ctx, hello("qwen3:0.6b")); err != nil {
		t.Fatal(err)
	}
	if st := ts.mgr.Stats(); st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
	// The answer is counted in the metrics with Ollama's figures.
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"prism_completion_tokens_total 6", "prism_prompt_tokens_total 11", "prism_time_to_first_token_seconds_count 1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// The Responses API takes the same backend: an Ollama model answers it,
// streamed and not, with its thinking as a reasoning item.
func TestOllamaResponses(t *testing.T) {
	ts, _ := withOllama(t)
	resp, err := ts.client.Responses.New(t.Context(), sayHi("qwen3:0.6b"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Hello there, friend." || len(resp.Output) != 2 || resp.Output[0].Type != "reasoning" ||
		resp.Usage.InputTokens != 11 || resp.Usage.OutputTokens != 6 {
		t.Errorf("response %s", resp.RawJSON())
	}
	s := readStream(t, ts, sayHi("qwen3:0.6b"))
	if s.text.String() != resp.OutputText() || s.thinking.String() != "The user greets me." || s.last != "response.completed" {
		t.Errorf("streamed %q / %q, last %s", s.text.String(), s.thinking.String(), s.last)
	}
}

// Ollama at the default URL that never answered is simply not there: one
// INFO line, and neither /v1/models nor model_not_found speak of it. A URL
// configured on purpose that does not answer stays a warning, and the
// message says its models could not be checked.
func TestOllamaAbsent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() // nothing answers once closed
	ln.Close()
	for _, onPurpose := range []bool{false, true} {
		t.Run(fmt.Sprint("on purpose ", onPurpose), func(t *testing.T) {
			var logs syncBuffer
			client, err := ollama.New(closed)
			if err != nil {
				t.Fatal(err)
			}
			ts := start(t, nil, func(c *server.Config) {
				c.Ollama, c.OllamaOnPurpose = client, onPurpose
				c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			for range 3 {
				list, err := ts.client.Models.List(t.Context())
				if err != nil || len(list.Data) != 3 {
					t.Fatalf("models: %v %v", list, err)
				}
			}
			resp, out := post(t, ts, `{"model":"nope:7b","messages":[{"role":"user","content":"x"}]}`, nil)
			msg, _ := out["error"].(map[string]any)["message"].(string)
			if code, _ := errorOf(out); resp.StatusCode != 404 || code != "model_not_found" || strings.Contains(msg, "Ollama") != onPurpose {
				t.Errorf("unknown model: %d %v", resp.StatusCode, out)
			}
			warns, infos := strings.Count(logs.String(), "level=WARN"), strings.Count(logs.String(), `msg="no Ollama answering`)
			if onPurpose && (warns != 1 || infos != 0) || !onPurpose && (warns != 0 || infos != 1) {
				t.Errorf("%d WARN and %d INFO lines on Ollama:\n%s", warns, infos, logs.String())
			}
		})
	}
}
