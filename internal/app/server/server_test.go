//go:build cgo

package server_test

// The official openai-go client against the server over scripted models
// that run on the real ONNX Runtime: each model says one fixed answer
// whatever it is asked, so the tests know what must arrive.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"github.com/prism-local/prism/internal/app/wire"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/scripted"
	"github.com/prism-local/prism/lock"
)

const (
	thinkAnswer = "<think>\nThe user greets me.\n</think>\n\nHello there, friend."
	jsonAnswer  = `{"city": "Paris", "temperature": 21}`
	toolAnswer  = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>"
)

// models are the scripted models "think", "tool" and "json" (the real
// Qwen3 tokenizer and chat template), written once for the package's tests.
var models = scripted.Folder{Models: []scripted.Model{
	{Name: "think", Answer: thinkAnswer, Context: 256},
	{Name: "tool", Answer: toolAnswer, Context: 256},
	{Name: "json", Answer: jsonAnswer, Context: 256},
}}

func TestMain(m *testing.M) {
	code := m.Run()
	if stopShared != nil {
		stopShared()
	}
	models.Remove()
	qaModels.Remove()
	reasoningModels.remove()
	os.Exit(code)
}

type testServer struct {
	url    string
	client openai.Client
	mgr    *engine.Manager
}

func start(t *testing.T, mopts []engine.ManagerOption, mutate func(*server.Config)) *testServer {
	t.Helper()
	qs, stop := newServer(t, models.Path(t), mopts, mutate, nil)
	t.Cleanup(stop)
	return qs.testServer
}

// common is the server with the default settings that the tests which
// change nothing share, so its models load once.
func common(t *testing.T) *testServer {
	t.Helper()
	if sharedServer == nil {
		var qs *qaServer
		qs, stopShared = newServer(t, models.Path(t), nil, nil, nil)
		sharedServer = qs.testServer
	}
	return sharedServer
}

var (
	sharedServer *testServer
	stopShared   func()
)

// newServer is a server over the models of dir, with the Manager options
// mopts, Config changes and, for each model folder name, extra prism.Open
// options, and the function that stops it.
func newServer(t testing.TB, dir string, mopts []engine.ManagerOption, mutate func(*server.Config), open func(name string) []prism.Option) (*qaServer, func()) {
	t.Helper()
	ort := fixtures.ORTLib(t)
	lockDir, err := os.MkdirTemp("", "prism-serve-lock-")
	if err != nil {
		t.Fatal(err)
	}
	lk, err := lock.New(lock.WithDir(lockDir))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr, err := engine.NewManager(func(ctx context.Context, key string) (*engine.Engine, error) {
		d, _ := server.SplitKey(key)
		opts := []prism.Option{prism.WithDevice("cpu"), prism.WithORTLibrary(ort), prism.WithLock(lk), prism.WithLogger(logger)}
		if open != nil {
			opts = append(opts, open(filepath.Base(d))...)
		}
		return prism.Open(ctx, d, opts...)
	}, mopts...)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Scan(context.Background(), catalog.Sources{ModelsDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Manager: mgr, Catalog: cat, Loopback: true, Logger: logger}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0), option.WithHTTPClient(hc))
	stop := func() {
		hc.CloseIdleConnections()
		srv.Close()
		_ = mgr.Close()
		_ = os.RemoveAll(lockDir)
	}
	return &qaServer{testServer: &testServer{url: srv.URL, client: client, mgr: mgr}, lockDir: lockDir, http: hc}, stop
}

func hello(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi!")}}
}

func weatherTool() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Description: openai.String("Current weather"),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"city"}},
	})}
}

func extra(raw, field string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(raw), &m)
	var s string
	_ = json.Unmarshal(m[field], &s)
	return s
}

func TestChatStreamedAndNot(t *testing.T) {
	ts := common(t)
	resp, err := ts.client.Chat.Completions.New(t.Context(), hello("think"))
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Choices[0].Message
	if got := strings.TrimSpace(m.Content); got != "Hello there, friend." {
		t.Errorf("content %q", m.Content)
	}
	raw := m.RawJSON()
	if extra(raw, "reasoning_content") != "\nThe user greets me.\n" || extra(raw, "reasoning") != extra(raw, "reasoning_content") {
		t.Errorf("reasoning not separated under both names: %s", raw)
	}
	if resp.Choices[0].FinishReason != "stop" || resp.Usage.CompletionTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("finish %q usage %+v", resp.Choices[0].FinishReason, resp.Usage)
	}

	params := hello("think")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := ts.client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	var reasoning, reasoningAlt strings.Builder
	var usageChunks int
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		if len(c.Choices) == 0 {
			usageChunks++
			continue
		}
		reasoning.WriteString(extra(c.Choices[0].Delta.RawJSON(), "reasoning_content"))
		reasoningAlt.WriteString(extra(c.Choices[0].Delta.RawJSON(), "reasoning"))
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != m.Content {
		t.Errorf("streamed content %q, non-streamed %q", got, m.Content)
	}
	if reasoning.String() != extra(raw, "reasoning_content") || reasoningAlt.String() != reasoning.String() {
		t.Errorf("streamed reasoning %q / %q", reasoning.String(), reasoningAlt.String())
	}
	if usageChunks != 1 || acc.Usage.CompletionTokens != resp.Usage.CompletionTokens || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("usage chunks %d, usage %+v, finish %q", usageChunks, acc.Usage, acc.Choices[0].FinishReason)
	}
	// The same prompt again: the engine reuses the prefix and says so.
	if acc.Usage.PromptTokensDetails.CachedTokens == 0 {
		t.Errorf("no cached tokens reported on a repeated prompt: %+v", acc.Usage)
	}
}

func TestChatMaxTokensIsLength(t *testing.T) {
	ts := common(t)
	params := hello("think")
	params.MaxCompletionTokens = openai.Int(3)
	resp, err := ts.client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "length" || resp.Usage.CompletionTokens != 3 {
		t.Errorf("finish %q, usage %+v", resp.Choices[0].FinishReason, resp.Usage)
	}
}

func TestToolCall(t *testing.T) {
	ts := common(t)
	params := hello("tool")
	params.Tools = weatherTool()
	resp, err := ts.client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if resp.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" ||
		!json.Valid([]byte(calls[0].Function.Arguments)) || resp.Choices[0].Message.Content != "" {
		t.Fatalf("answer %s", resp.RawJSON())
	}

	stream := ts.client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	finished := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if _, ok := acc.JustFinishedToolCall(); ok {
			finished++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	sc := acc.Choices[0].Message.ToolCalls
	if len(sc) != 1 || sc[0].Function.Name != "get_weather" || !strings.HasPrefix(sc[0].ID, "call_") || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("streamed calls %+v, finish %q", sc, acc.Choices[0].FinishReason)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(sc[0].Function.Arguments), &args); err != nil || args["city"] != "Paris" {
		t.Errorf("joined arguments %q: %v", sc[0].Function.Arguments, err)
	}
	if sc[0].Function.Arguments != calls[0].Function.Arguments {
		t.Errorf("streamed arguments %q, non-streamed %q", sc[0].Function.Arguments, calls[0].Function.Arguments)
	}
}

func post(t *testing.T, ts *testServer, body string, header http.Header) (*http.Response, map[string]any) {
	t.Helper()
	return postTo(t, ts, "/v1/chat/completions", body, header)
}

func postTo(t *testing.T, ts *testServer, path, body string, header http.Header) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("status %d: body is not JSON: %v", resp.StatusCode, err)
	}
	return resp, out
}

func errorOf(body map[string]any) (code, param any) {
	e, _ := body["error"].(map[string]any)
	return e["code"], e["param"]
}

func TestBadRequests(t *testing.T) {
	ts := start(t, nil, func(c *server.Config) { c.APIKey = "secret" })
	auth := http.Header{"Authorization": {"Bearer secret"}}
	long := strings.Repeat("word ", 400)
	tests := []struct {
		name   string
		path   string // "" for /v1/chat/completions
		body   string
		header http.Header
		status int
		code   string
		param  any
	}{
		{"no key", "", `{"model":"think","messages":[{"role":"user","content":"hi"}]}`, http.Header{}, 401, "invalid_api_key", nil},
		{"wrong key", "", `{"model":"think","messages":[{"role":"user","content":"hi"}]}`, http.Header{"Authorization": {"Bearer secrex"}}, 401, "invalid_api_key", nil},
		{"not json", "", `{`, auth, 400, "invalid_request_error", nil},
		{"unknown parameter", "", `{"model":"think","messages":[{"role":"user","content":"hi"}],"temprature":1}`, auth, 400, "unknown_parameter", "temprature"},
		{"n", "", `{"model":"think","messages":[{"role":"user","content":"hi"}],"n":2}`, auth, 400, "unsupported_parameter", "n"},
		{"temperature", "", `{"model":"think","messages":[{"role":"user","content":"hi"}],"temperature":3}`, auth, 400, "invalid_request_error", "temperature"},
		{"top_p", "", `{"model":"think","messages":[{"role":"user","content":"hi"}],"top_p":2}`, auth, 400, "invalid_request_error", "top_p"},
		{"max_tokens", "", `{"model":"think","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, auth, 400, "invalid_request_error", "max_tokens"},
		{"missing model", "", `{"messages":[{"role":"user","content":"hi"}]}`, auth, 400, "invalid_request_error", "model"},
		{"unknown model", "", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, auth, 404, "model_not_found", "model"},
		{"bad schema", "", `{"model":"json","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"nope"}}}}`, auth, 400, "invalid_request_error", "response_format.json_schema.schema"},
		{"strict tool schema", "", `{"model":"tool","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather","strict":true,"parameters":{"type":"object","not":{"multipleOf":2}}}}]}`, auth, 400, "invalid_request_error", "tools[0].function.parameters"},
		{"top_logprobs 21", "", `{"model":"think","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21}`, auth, 400, "invalid_request_error", "top_logprobs"},
		{"top_logprobs without logprobs", "", `{"model":"think","messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, auth, 400, "invalid_request_error", "top_logprobs"},
		{"tool_choice unknown function", "", `{"model":"tool","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather"}}],"tool_choice":{"type":"function","function":{"name":"nope"}}}`, auth, 400, "invalid_request_error", "tool_choice"},
		{"context length", "", `{"model":"think","messages":[{"role":"user","content":"` + long + `"}]}`, auth, 400, "context_length_exceeded", "messages"},
		{"too large", "", `{"model":"think","messages":[{"role":"user","content":"` + strings.Repeat("x", 10<<20) + `"}]}`, auth, 413, "request_too_large", nil},
		{"completions n", "/v1/completions", `{"model":"think","prompt":"hi","n":2}`, auth, 400, "unsupported_parameter", "n"},
		{"completions logprobs 6", "/v1/completions", `{"model":"think","prompt":"hi","logprobs":6}`, auth, 400, "invalid_request_error", "logprobs"},
		{"completions logprobs with echo", "/v1/completions", `{"model":"think","prompt":"hi","logprobs":1,"echo":true}`, auth, 400, "unsupported_parameter", "echo"},
		{"completions prompt", "/v1/completions", `{"model":"think","prompt":""}`, auth, 400, "invalid_request_error", "prompt"},
		{"embeddings", "/v1/embeddings", `{"model":"think","input":"hi"}`, auth, 400, "unsupported_model", "model"},
		{"not served", "/v1/nothing", `{}`, auth, 404, "not_found", nil},
		{"rebinding host", "", `{"model":"think","messages":[{"role":"user","content":"hi"}]}`, http.Header{"Authorization": {"Bearer secret"}, "Host": {"evil.example"}}, 403, "forbidden_host", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *http.Response
			var body map[string]any
			if host := tt.header.Get("Host"); host != "" {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.url+"/v1/chat/completions", strings.NewReader(tt.body))
				req.Header.Set("Content-Type", "application/json")
				req.Host = host
				req.Header.Set("Authorization", "Bearer secret")
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Body.Close()
				resp = r
				_ = json.NewDecoder(r.Body).Decode(&body)
			} else {
				resp, body = postTo(t, ts, cmp.Or(tt.path, "/v1/chat/completions"), tt.body, tt.header)
			}
			code, param := errorOf(body)
			if resp.StatusCode != tt.status || code != tt.code || param != tt.param {
				t.Errorf("status %d code %v param %v, want %d %s %v: %v", resp.StatusCode, code, param, tt.status, tt.code, tt.param, body)
			}
			if e, _ := body["error"].(map[string]any); e["message"] == "" || e["type"] == nil {
				t.Errorf("error body %v", body)
			}
			ok, okBody := post(t, ts, `{"model":"think","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, auth)
			if ok.StatusCode != 200 {
				t.Errorf("the server no longer serves: %d %v", ok.StatusCode, okBody)
			}
		})
	}
}

// holdLock takes the engine lock as a long generation would.
func holdLock(t *testing.T, ts *testServer) func() {
	t.Helper()
	lease, err := ts.mgr.Use(t.Context(), filepath.Join(models.Path(t), "think"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return lease.Release
}

func TestBusy(t *testing.T) {
	t.Run("queue full", func(t *testing.T) {
		ts := start(t, []engine.ManagerOption{engine.WithMaxQueue(0)}, nil)
		release := holdLock(t, ts)
		resp, body := post(t, ts, `{"model":"think","messages":[{"role":"user","content":"hi"}]}`, nil)
		release()
		if code, _ := errorOf(body); resp.StatusCode != 503 || code != "server_busy" {
			t.Errorf("status %d %v", resp.StatusCode, body)
		}
	})
	t.Run("queue timeout", func(t *testing.T) {
		ts := start(t, []engine.ManagerOption{engine.WithQueueTimeout(50 * time.Millisecond)}, nil)
		release := holdLock(t, ts)
		resp, body := post(t, ts, `{"model":"think","messages":[{"role":"user","content":"hi"}]}`, nil)
		release()
		if code, _ := errorOf(body); resp.StatusCode != 503 || code != "server_busy" || resp.Header.Get("Retry-After") != "30" {
			t.Errorf("status %d Retry-After %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	})
}

func TestClientLeavesMidStream(t *testing.T) {
	ts := common(t)
	ctx, cancel := context.WithCancel(t.Context())
	stream := ts.client.Chat.Completions.NewStreaming(ctx, hello("think"))
	if !stream.Next() {
		t.Fatalf("no first chunk: %v", stream.Err())
	}
	cancel()
	for stream.Next() {
	}
	if err := stream.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("stream ended with %v", err)
	}
	// The lock was released: the next request is served.
	if _, err := ts.client.Chat.Completions.New(t.Context(), hello("think")); err != nil {
		t.Fatal(err)
	}
}

func TestModelsAndHealth(t *testing.T) {
	ts := common(t)
	list, err := ts.client.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "json,think,tool" {
		t.Errorf("models %v", ids)
	}
	if m, err := ts.client.Models.Get(t.Context(), "tool"); err != nil || m.ID != "tool" {
		t.Errorf("get model: %v %+v", err, m)
	}
	if _, err := ts.client.Chat.Completions.New(t.Context(), hello("think")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ts.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h wire.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if h.Status != "ok" || h.Model != "think" || h.Device != "cpu" || h.MaxQueue != engine.DefaultMaxQueue || h.Pull {
		t.Errorf("health %+v", h)
	}

	mresp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	text, err := io.ReadAll(mresp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`prism_http_requests_total{endpoint="POST /v1/chat/completions",status="200"}`,
		"prism_completion_tokens_total ", "prism_cached_tokens_total ", "prism_time_to_first_token_seconds_count ",
		`prism_model_resident{device="cpu",model="think"} 1`, "prism_queue_depth 0", "prism_queue_max 8"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestStructuredOutput(t *testing.T) {
	ts := common(t)
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"city", "temperature"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "temperature": map[string]any{"type": "integer"}}}
	params := hello("json")
	params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema, Strict: openai.Bool(true)}}}
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
	if err := dec.Decode(&got); err != nil || got.City != "Paris" || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("content %q (%v), finish %q", resp.Choices[0].Message.Content, err, resp.Choices[0].FinishReason)
	}

	params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	stream := ts.client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if c := acc.Choices[0].Message.Content; !json.Valid([]byte(c)) || c != resp.Choices[0].Message.Content {
		t.Errorf("json mode streamed %q", c)
	}
}

func TestCompletions(t *testing.T) {
	ts := common(t)
	params := openai.CompletionNewParams{Model: "think", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(100)}
	resp, err := ts.client.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	// Raw text: the think block stays in it (P7).
	if got := resp.Choices[0].Text; got != thinkAnswer || resp.Choices[0].FinishReason != "stop" || resp.Usage.CompletionTokens == 0 {
		t.Errorf("text %q finish %q usage %+v", got, resp.Choices[0].FinishReason, resp.Usage)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	params.Echo = openai.Bool(true)
	stream := ts.client.Completions.NewStreaming(t.Context(), params)
	var text strings.Builder
	var finish string
	var usage openai.CompletionUsage
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 {
			usage = c.Usage
			continue
		}
		text.WriteString(c.Choices[0].Text)
		if c.Choices[0].FinishReason != "" {
			finish = string(c.Choices[0].FinishReason)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Once upon a time"+thinkAnswer || finish != "stop" || usage.CompletionTokens != resp.Usage.CompletionTokens {
		t.Errorf("streamed %q finish %q usage %+v", text.String(), finish, usage)
	}
	limited, err := ts.client.Completions.New(t.Context(), openai.CompletionNewParams{Model: "think",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}, MaxTokens: openai.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	if limited.Choices[0].FinishReason != "length" || limited.Usage.CompletionTokens != 2 {
		t.Errorf("max_tokens 2: %s", limited.RawJSON())
	}
}

func TestUnloadAndDrain(t *testing.T) {
	drained := make(chan struct{}, 1)
	ts := start(t, nil, func(c *server.Config) { c.Drain = func() { drained <- struct{}{} } })
	health := func() wire.Health {
		t.Helper()
		resp, err := http.Get(ts.url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h wire.Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if _, err := ts.client.Chat.Completions.New(t.Context(), hello("think")); err != nil {
		t.Fatal(err)
	}
	resp, body := postTo(t, ts, "/v1/unload", "", nil)
	if resp.StatusCode != 200 || body["unloaded"] != true || body["model"] != "think" || health().Model != "" {
		t.Errorf("unload: %d %v", resp.StatusCode, body)
	}
	resp, body = postTo(t, ts, "/v1/unload", "{}", nil)
	if resp.StatusCode != 200 || body["unloaded"] != false || body["model"] != nil {
		t.Errorf("second unload: %d %v", resp.StatusCode, body)
	}
	resp, body = postTo(t, ts, "/v1/unload", "[1]", nil)
	if code, _ := errorOf(body); resp.StatusCode != 400 || code != "invalid_request_error" {
		t.Errorf("unload with a list: %d %v", resp.StatusCode, body)
	}
	// The model loads again on the next request.
	if _, err := ts.client.Chat.Completions.New(t.Context(), hello("think")); err != nil {
		t.Fatal(err)
	}
	resp, body = postTo(t, ts, "/v1/drain", "", nil)
	if resp.StatusCode != 200 || body["drained"] != true || body["model"] != "think" || body["exit_in_ms"] != float64(250) {
		t.Errorf("drain: %d %v", resp.StatusCode, body)
	}
	select {
	case <-drained:
	default:
		t.Error("drain did not ask for the shutdown")
	}
}

func TestTokenizeAndTemplate(t *testing.T) {
	ts := common(t)
	resp, body := postTo(t, ts, "/tokenize", `{"model":"think","content":"Hello world"}`, nil)
	raw, _ := json.Marshal(body["tokens"])
	resp2, body2 := postTo(t, ts, "/detokenize", `{"model":"think","tokens":`+string(raw)+`}`, nil)
	if resp.StatusCode != 200 || resp2.StatusCode != 200 || body2["content"] != "Hello world" {
		t.Errorf("tokenize %d %v, detokenize %d %v", resp.StatusCode, body, resp2.StatusCode, body2)
	}
	_, pieces := postTo(t, ts, "/tokenize", `{"model":"think","content":"Hello world","with_pieces":true}`, nil)
	if list, _ := pieces["tokens"].([]any); len(list) == 0 || list[0].(map[string]any)["piece"] != "Hello" {
		t.Errorf("with pieces: %v", pieces)
	}
	resp, body = postTo(t, ts, "/apply-template", `{"model":"tool","messages":[{"role":"user","content":"Hi!"}],"tools":[{"type":"function","function":{"name":"get_weather"}}]}`, nil)
	prompt, _ := body["prompt"].(string)
	if resp.StatusCode != 200 || !strings.Contains(prompt, "<|im_start|>user\nHi!<|im_end|>") || !strings.Contains(prompt, `"name": "get_weather"`) {
		t.Errorf("apply-template %d: %v", resp.StatusCode, body)
	}
	for _, tt := range []struct{ path, body, code, param string }{
		{"/detokenize", `{"model":"think","tokens":[-1]}`, "invalid_request_error", "tokens[0]"},
		{"/tokenize", `{"model":"think","content":"x","extra":1}`, "unknown_parameter", "extra"},
		{"/tokenize", `{"content":"x"}`, "invalid_request_error", "model"},
	} {
		resp, body := postTo(t, ts, tt.path, tt.body, nil)
		code, param := errorOf(body)
		if resp.StatusCode != 400 || code != tt.code || param != tt.param {
			t.Errorf("%s %s: %d %v", tt.path, tt.body, resp.StatusCode, body)
		}
	}
}

// Speculative decoding through the server and the official client: a
// question that quotes the answer gives the drafter something to copy, and
// the answer is the same with speculation on (the default) and with the
// Prism extension speculation: false, streamed and not.
func TestChatSpeculation(t *testing.T) {
	ts := common(t)
	params := openai.ChatCompletionNewParams{
		Model: "think",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Say exactly this: " + thinkAnswer),
		},
	}
	on, err := ts.client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	off, err := ts.client.Chat.Completions.New(t.Context(), params, option.WithJSONSet("speculation", false))
	if err != nil {
		t.Fatal(err)
	}
	a, b := on.Choices[0].Message, off.Choices[0].Message
	if a.Content != b.Content || extra(a.RawJSON(), "reasoning_content") != extra(b.RawJSON(), "reasoning_content") ||
		on.Usage.CompletionTokens != off.Usage.CompletionTokens || strings.TrimSpace(a.Content) != "Hello there, friend." {
		t.Errorf("speculation on: %q (%d tokens); off: %q (%d tokens)", a.Content, on.Usage.CompletionTokens, b.Content, off.Usage.CompletionTokens)
	}
	stream := ts.client.Chat.Completions.NewStreaming(t.Context(), params, option.WithJSONSet("speculation", false))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != a.Content {
		t.Errorf("streamed without speculation %q, want %q", acc.Choices[0].Message.Content, a.Content)
	}
	if resp, body := post(t, ts, `{"model": "think", "messages": [{"role": "user", "content": "hi"}], "speculation": "no"}`, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("speculation \"no\": %d %v, want 400", resp.StatusCode, body)
	}
}
