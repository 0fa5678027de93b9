package ollama_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/engine/ollama/ollamatest"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/tools"
)

func client(t *testing.T, url string) *ollama.Client {
	t.Helper()
	c, err := ollama.New(url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collect reads a whole stream through Events.
func collect(t *testing.T, st *ollama.ChatStream) (tools.Result, int) {
	t.Helper()
	ev := ollama.NewEvents(func(i int) string { return "call_" + string(rune('a'+i)) })
	var all []tools.Event
	for st.Next() {
		all = ev.Feed(all, st.Chunk())
	}
	all = ev.Flush(all)
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return tools.Assemble(all, ev.ReasoningSeen()), ev.Calls()
}

func TestChatStreamsThinkingContentAndUsage(t *testing.T) {
	srv := ollamatest.New(t, ollamatest.Model{Name: "qwen3:0.6b", Answer: ollamatest.Answer{
		Chunks:     []ollama.Chunk{{Thinking: "Let me"}, {Thinking: " think."}, {Content: "Hello"}, {Content: ", world"}},
		DoneReason: "length", PromptTokens: 12, CompletionTokens: 4}})
	temp, seed, n := 0.0, int64(7), 5
	st, err := client(t, srv.URL).Chat(t.Context(), ollama.ChatRequest{Model: "qwen3:0.6b",
		Messages: []ollama.Message{{Role: "user", Content: "hi"}},
		Options:  ollama.Options{Temperature: &temp, Seed: &seed, NumPredict: &n, Stop: []string{"\n\n"}},
		Think:    ollama.ThinkOn, Format: json.RawMessage(`"json"`)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, calls := collect(t, st)
	if res.Reasoning != "Let me think." || res.Content != "Hello, world" || !res.HasReasoning || calls != 0 {
		t.Fatalf("got %+v, %d calls", res, calls)
	}
	r := st.Result()
	if r.DoneReason != "length" || r.PromptTokens != 12 || r.CompletionTokens != 4 || r.Eval != 3*time.Millisecond {
		t.Fatalf("result %+v", r)
	}
	var sent map[string]any
	if err := json.Unmarshal(srv.Chats()[0], &sent); err != nil {
		t.Fatal(err)
	}
	opts, _ := sent["options"].(map[string]any)
	if sent["stream"] != true || sent["think"] != true || sent["format"] != "json" || opts["temperature"] != 0.0 ||
		opts["seed"] != 7.0 || opts["num_predict"] != 5.0 || opts["top_p"] != nil {
		t.Fatalf("request body %s", srv.Chats()[0])
	}
}

func TestThinkTagsInContentAreReasoning(t *testing.T) {
	srv := ollamatest.New(t, ollamatest.Model{Name: "r1", Answer: ollamatest.Answer{
		Chunks: []ollama.Chunk{{Content: "<thi"}, {Content: "nk>why"}, {Content: "</th"}, {Content: "ink>Answer"}}}})
	st, err := client(t, srv.URL).Chat(t.Context(), ollama.ChatRequest{Model: "r1", Messages: []ollama.Message{{Role: "user", Content: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, _ := collect(t, st)
	if res.Reasoning != "why" || res.Content != "Answer" {
		t.Fatalf("got %+v", res)
	}
}

func TestToolCallsBecomeCallDeltas(t *testing.T) {
	srv := ollamatest.New(t, ollamatest.Model{Name: "llama3.2", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{
		{ToolCalls: []ollama.ToolCall{
			{Function: ollama.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{ "city": "Paris" }`)}},
			{ID: "call_x", Function: ollama.FunctionCall{Index: 1, Name: "get_time", Arguments: json.RawMessage(`{}`)}}}}}}})
	tool := json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`)
	st, err := client(t, srv.URL).Chat(t.Context(), ollama.ChatRequest{Model: "llama3.2",
		Messages: []ollama.Message{{Role: "user", Content: "weather?"}}, Tools: []json.RawMessage{tool}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, calls := collect(t, st)
	want := []tools.Call{{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "call_x", Name: "get_time", Arguments: `{}`}}
	if calls != 2 || len(res.Calls) != 2 || res.Calls[0] != want[0] || res.Calls[1] != want[1] {
		t.Fatalf("got %+v", res.Calls)
	}
	if !strings.Contains(string(srv.Chats()[0]), `"tools":[{"type":"function"`) {
		t.Fatalf("tools not sent as given: %s", srv.Chats()[0])
	}
}

// closedURL is an address nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestChatFailuresBeforeTheAnswerAreChatErrors(t *testing.T) {
	models := []ollamatest.Model{
		{Name: "ok", Answer: ollamatest.Answer{Chunks: []ollama.Chunk{{Content: "x"}}}},
		{Name: "notools", NoTools: true},
		{Name: "errfirst", Answer: ollamatest.Answer{Fail: ollamatest.ErrorLine}},
		{Name: "cutfirst", Answer: ollamatest.Answer{Fail: ollamatest.Cut}},
	}
	srv := ollamatest.New(t, models...)
	failing := ollamatest.New(t, models...)
	failing.FailAll(http.StatusInternalServerError)
	tool := json.RawMessage(`{"type":"function","function":{"name":"f"}}`)
	for _, tc := range []struct {
		name, url, model string
		tools            []json.RawMessage
		code             string
		status           int
	}{
		{"unreachable", closedURL(t), "ok", nil, errcode.BackendUnavailable, 0},
		{"unknown model", srv.URL, "nope:7b", nil, errcode.ModelNotFound, 404},
		{"5xx", failing.URL, "ok", nil, errcode.BackendUnavailable, 500},
		{"no tools", srv.URL, "notools", []json.RawMessage{tool}, errcode.ToolsNotSupported, 400},
		{"error line first", srv.URL, "errfirst", nil, errcode.BackendUnavailable, 0},
		{"cut before the first chunk", srv.URL, "cutfirst", nil, errcode.BackendUnavailable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := client(t, tc.url).Chat(t.Context(), ollama.ChatRequest{Model: tc.model,
				Messages: []ollama.Message{{Role: "user", Content: "q"}}, Tools: tc.tools})
			var oe *ollama.Error
			if st != nil || !errors.As(err, &oe) || errcode.Of(err) != tc.code || oe.Status != tc.status {
				t.Fatalf("got %v, %v; want code %s status %d", st, err, tc.code, tc.status)
			}
		})
	}
}

func TestChatFailuresMidStreamEndTheStream(t *testing.T) {
	chunks := []ollama.Chunk{{Content: "a"}, {Content: "b"}}
	srv := ollamatest.New(t,
		ollamatest.Model{Name: "errline", Answer: ollamatest.Answer{Chunks: chunks, Fail: ollamatest.ErrorLine, FailAfter: 1}},
		ollamatest.Model{Name: "cut", Answer: ollamatest.Answer{Chunks: chunks, Fail: ollamatest.Cut, FailAfter: 1}})
	for _, model := range []string{"errline", "cut"} {
		t.Run(model, func(t *testing.T) {
			st, err := client(t, srv.URL).Chat(t.Context(), ollama.ChatRequest{Model: model, Messages: []ollama.Message{{Role: "user", Content: "q"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var text string
			for st.Next() {
				text += st.Chunk().Content
			}
			if text != "a" || errcode.Of(st.Err()) != errcode.BackendUnavailable || st.Done() {
				t.Fatalf("text %q, err %v", text, st.Err())
			}
		})
	}
}

func TestCancelAndCloseEndAHangingStreamAtOnce(t *testing.T) {
	srv := ollamatest.New(t, ollamatest.Model{Name: "slow", Answer: ollamatest.Answer{
		Chunks: []ollama.Chunk{{Content: "a"}, {Content: "b"}}, Fail: ollamatest.Hang, FailAfter: 1}})
	c := client(t, srv.URL)
	req := ollama.ChatRequest{Model: "slow", Messages: []ollama.Message{{Role: "user", Content: "q"}}}

	ctx, cancel := context.WithCancel(t.Context())
	st, err := c.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Next() || st.Chunk().Content != "a" {
		t.Fatal("no first chunk")
	}
	cancel()
	if st.Next() || !errors.Is(st.Err(), context.Canceled) {
		t.Fatalf("after cancel: err %v", st.Err())
	}

	st, err = c.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	st.Next()
	done := make(chan bool)
	go func() { done <- st.Next() }()
	_ = st.Close()
	if <-done || st.Err() != nil {
		t.Fatalf("after close: err %v", st.Err())
	}
}

func TestModelsAndEmbed(t *testing.T) {
	srv := ollamatest.New(t, ollamatest.Model{Name: "llama3.2:3b"}, ollamatest.Model{Name: "nomic-embed-text:latest", Dims: 8})
	c := client(t, srv.URL)
	models, err := c.Models(t.Context())
	if err != nil || len(models) != 2 || models[0].Name != "llama3.2:3b" || models[0].Details.ParameterSize != "3.2B" {
		t.Fatalf("models %+v, %v", models, err)
	}
	emb, err := c.Embed(t.Context(), ollama.EmbedRequest{Model: "nomic-embed-text:latest", Input: []string{"a", "bc"}})
	if err != nil || len(emb.Vectors) != 2 || len(emb.Vectors[1]) != 8 || emb.PromptTokens != 2 {
		t.Fatalf("embed %+v, %v", emb, err)
	}
	if _, err := c.Embed(t.Context(), ollama.EmbedRequest{Model: "nope", Input: []string{"a"}}); errcode.Of(err) != errcode.ModelNotFound {
		t.Fatalf("unknown model: %v", err)
	}
	if _, err := client(t, closedURL(t)).Models(t.Context()); errcode.Of(err) != errcode.BackendUnavailable {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestNewRefusesABadURL(t *testing.T) {
	for _, u := range []string{"ftp://x", "localhost:11434", "http://"} {
		if _, err := ollama.New(u); errcode.Of(err) != errcode.InvalidSetting {
			t.Errorf("%q: %v", u, err)
		}
	}
}
