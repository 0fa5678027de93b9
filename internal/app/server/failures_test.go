//go:build cgo

package server_test

// The spec's failure-mode table and the errors docs/api.md lists, each sent
// to the real server, which must answer with the status, code and param
// given there and then still serve. (TestBadRequests in server_test.go
// holds the rows it already covers.)

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

func msg(content string) string {
	return `"messages":[{"role":"user","content":"` + content + `"}]`
}

func TestFailureModes(t *testing.T) {
	qs := startOn(t, qaModels.Path(t), nil, nil, func(name string) []prism.Option {
		if name == "count" {
			return []prism.Option{prism.WithPrefillChunk(8)} // the long-prompt row
		}
		return nil
	})
	long := strings.Repeat("word ", 400)
	tests := []struct {
		name         string
		method, path string // POST /v1/chat/completions when empty
		body         string
		header       http.Header
		status       int
		code         string
		param        any
		check        func(t *testing.T, resp *http.Response, body map[string]any)
	}{
		// The spec's failure-mode table.
		{name: "model cannot be loaded", body: `{"model":"broken",` + msg("hi") + `}`, status: 500, code: "model_load_failed",
			check: messageHas("onnx")},
		{name: "name matches several models", body: `{"model":"o",` + msg("hi") + `}`, status: 400, code: "ambiguous_model", param: "model",
			check: messageHas("count", "hello", "loop")},
		{name: "prompt fills the context window", body: `{"model":"hello",` + msg(long) + `}`, status: 400, code: "context_length_exceeded", param: "messages"},
		{name: "completions prompt fills the context window", path: "/v1/completions", body: `{"model":"hello","prompt":"` + long + `"}`,
			status: 400, code: "context_length_exceeded", param: "messages"},
		{name: "repeating token cycle", body: `{"model":"loop",` + msg("hi") + `}`, status: 200, check: func(t *testing.T, _ *http.Response, body map[string]any) {
			choice := body["choices"].([]any)[0].(map[string]any)
			usage := body["usage"].(map[string]any)
			if choice["finish_reason"] != "length" || usage["completion_tokens"].(float64) >= 100 {
				t.Errorf("loop guard: finish %v after %v tokens", choice["finish_reason"], usage["completion_tokens"])
			}
		}},
		{name: "long prompt prefilled in chunks", body: `{"model":"count",` + msg(strings.Repeat("one two ", 30)) + `,"max_tokens":8}`, status: 200,
			check: func(t *testing.T, _ *http.Response, body map[string]any) {
				content := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
				if c, _ := content.(string); !strings.HasPrefix(countAnswer(150), c) || c == "" {
					t.Errorf("chunked prefill answered %q", content)
				}
			}},
		// The spec's row "non-zero frequency_penalty / presence_penalty on
		// an ONNX model: 400" no longer holds: the engine applies them.
		{name: "penalties are applied, not refused", body: `{"model":"hello",` + msg("hi") + `,"frequency_penalty":0.5,"presence_penalty":0.5}`, status: 200},
		// P11: a template that fails with tools is an error, never a silent drop.
		{name: "template fails with tools", body: `{"model":"notools",` + msg("hi") + `,"tools":[{"type":"function","function":{"name":"get_weather"}}]}`,
			status: 400, code: "template_render_failed", check: messageHas("notools", "cannot render the tools")},
		// This Qwen3 template uses an assistant message's content as a
		// string, so the content: null OpenAI clients send beside tool
		// calls fails it; the server renders it as "" and says so.
		{name: "null content under the Qwen3 template", body: `{"model":"hello","messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"sunny"}],"tools":[{"type":"function","function":{"name":"get_weather"}}]}`,
			status: 200, check: func(t *testing.T, resp *http.Response, _ map[string]any) {
				if got := resp.Header.Get("X-Prism-Null-Content"); got != `rendered as ""` {
					t.Errorf("X-Prism-Null-Content = %q; want it to say the null content was rendered as \"\"", got)
				}
			}},
		// docs/api.md: the wire format's errors.
		{name: "empty body", body: ``, status: 400, code: "invalid_request_error"},
		{name: "body not an object", body: `[1]`, status: 400, code: "invalid_request_error"},
		{name: "data after the object", body: `{"model":"hello",` + msg("hi") + `} {}`, status: 400, code: "invalid_request_error"},
		{name: "invalid UTF-8", body: "{\"model\":\"hello\"," + msg("\xff") + "}", status: 400, code: "invalid_request_error"},
		{name: "wrong JSON type", body: `{"model":"hello","messages":"hi"}`, status: 400, code: "invalid_request_error", param: "messages"},
		{name: "messages missing", body: `{"model":"hello"}`, status: 400, code: "invalid_request_error", param: "messages"},
		{name: "role missing", body: `{"model":"hello","messages":[{"content":"hi"}]}`, status: 400, code: "invalid_request_error", param: "messages[0].role"},
		{name: "unknown role", body: `{"model":"hello","messages":[{"role":"wizard","content":"hi"}]}`, status: 400, code: "invalid_request_error", param: "messages[0].role"},
		{name: "tool message without tool_call_id", body: `{"model":"hello","messages":[{"role":"tool","content":"21"}]}`, status: 400, code: "invalid_request_error", param: "messages[0].tool_call_id"},
		{name: "stream_options without stream", body: `{"model":"hello",` + msg("hi") + `,"stream_options":{"include_usage":true}}`, status: 400, code: "invalid_request_error", param: "stream_options"},
		{name: "max_tokens disagree", body: `{"model":"hello",` + msg("hi") + `,"max_tokens":3,"max_completion_tokens":4}`, status: 400, code: "invalid_request_error", param: "max_tokens"},
		{name: "unknown nested parameter", body: `{"model":"hello",` + msg("hi") + `,"stream":true,"stream_options":{"x":1}}`, status: 400, code: "unknown_parameter", param: "stream_options.x"},
		{name: "logit_bias", body: `{"model":"hello",` + msg("hi") + `,"logit_bias":{"1":2}}`, status: 400, code: "unsupported_parameter", param: "logit_bias"},
		{name: "image part", body: `{"model":"hello","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
			status: 400, code: "unsupported_parameter", param: "messages[0].content[0].type"},
		{name: "functions", body: `{"model":"hello",` + msg("hi") + `,"functions":[{"name":"f"}]}`, status: 400, code: "unsupported_parameter", param: "functions"},
		{name: "variant left empty", body: `{"model":"hello:",` + msg("hi") + `}`, status: 400, code: "invalid_request_error", param: "model"},
		{name: "penalty out of range", body: `{"model":"hello",` + msg("hi") + `,"frequency_penalty":3}`, status: 400, code: "invalid_request_error", param: "frequency_penalty"},
		{name: "tool_choice without tools", body: `{"model":"hello",` + msg("hi") + `,"tool_choice":"required"}`, status: 400, code: "invalid_request_error", param: "tool_choice"},
		{name: "GET on a POST route", method: http.MethodGet, path: "/v1/chat/completions", status: 405, code: "method_not_allowed",
			check: func(t *testing.T, resp *http.Response, _ map[string]any) {
				if got := resp.Header.Get("Allow"); got != "POST" {
					t.Errorf("Allow %q", got)
				}
			}},
		{name: "POST on a GET route", path: "/v1/models", body: `{}`, status: 405, code: "method_not_allowed",
			check: func(t *testing.T, resp *http.Response, _ map[string]any) {
				if got := resp.Header.Get("Allow"); got != "GET, HEAD" {
					t.Errorf("Allow %q", got)
				}
			}},
		{name: "no such path", method: http.MethodGet, path: "/v1/nothing", status: 404, code: "not_found"},
		{name: "unload unknown field", path: "/v1/unload", body: `{"force":true}`, status: 400, code: "unknown_parameter", param: "force"},
		{name: "tokenize unknown field", path: "/tokenize", body: `{"model":"hello","content":"x","add_bos":true}`, status: 400, code: "unknown_parameter", param: "add_bos"},
		{name: "detokenize unknown field", path: "/detokenize", body: `{"model":"hello","tokens":[1],"skip":true}`, status: 400, code: "unknown_parameter", param: "skip"},
		{name: "detokenize wrong type", path: "/detokenize", body: `{"model":"hello","tokens":"1"}`, status: 400, code: "invalid_request_error", param: "tokens"},
		{name: "apply-template unknown field", path: "/apply-template", body: `{"model":"hello",` + msg("hi") + `,"foo":1}`, status: 400, code: "unknown_parameter", param: "foo"},
		{name: "unload with a list", path: "/v1/unload", body: `[1]`, status: 400, code: "invalid_request_error"},
		{name: "tokenize unknown model", path: "/tokenize", body: `{"model":"nope","content":"x"}`, status: 404, code: "model_not_found", param: "model"},
		{name: "apply-template fails with tools", path: "/apply-template", body: `{"model":"notools",` + msg("hi") + `,"tools":[{"type":"function","function":{"name":"f"}}]}`,
			status: 400, code: "template_render_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path := tt.method, tt.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/v1/chat/completions"
			}
			resp, body := qs.call(t, method, path, tt.body, tt.header)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %v", resp.StatusCode, tt.status, body)
			}
			if tt.code != "" {
				checkError(t, resp, body, tt.code, tt.param)
			}
			if tt.check != nil && body != nil {
				tt.check(t, resp, body)
			}
			qs.serves(t, "hello")
		})
	}
}

// checkError checks a JSON error body: code, param, a message and the type
// that goes with the status.
func checkError(t *testing.T, resp *http.Response, body map[string]any, code string, param any) {
	t.Helper()
	e, _ := body["error"].(map[string]any)
	if e == nil {
		t.Fatalf("not a JSON error body: %v", body)
	}
	wantType := "invalid_request_error"
	if resp.StatusCode >= 500 {
		wantType = "server_error"
	}
	if e["code"] != code || e["param"] != param || e["type"] != wantType || e["message"] == "" {
		t.Errorf("error %v, want code %s param %v type %s", e, code, param, wantType)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func messageHas(words ...string) func(t *testing.T, resp *http.Response, body map[string]any) {
	return func(t *testing.T, _ *http.Response, body map[string]any) {
		e, _ := body["error"].(map[string]any)
		m, _ := e["message"].(string)
		for _, w := range words {
			if !strings.Contains(m, w) {
				t.Errorf("message %q does not name %q", m, w)
			}
		}
	}
}

// TestTemplateFallbackIsReported: without tools, a template that fails is
// replaced by the built-in format and the answer says so (I7).
func TestTemplateFallbackIsReported(t *testing.T) {
	qs := startOn(t, qaModels.Path(t), nil, nil, nil)
	for _, stream := range []string{"false", "true"} {
		resp, body := qs.call(t, http.MethodPost, "/v1/chat/completions", `{"model":"fallback",`+msg("hi")+`,"max_tokens":3,"stream":`+stream+`}`, nil)
		if got := resp.Header.Get("X-Prism-Template-Fallback"); resp.StatusCode != 200 || !strings.Contains(got, "always fails") {
			t.Errorf("stream %s: %d, X-Prism-Template-Fallback %q %v", stream, resp.StatusCode, got, body)
		}
	}
	resp, body := qs.call(t, http.MethodPost, "/v1/chat/completions", `{"model":"fallback",`+msg("hi")+`,"tools":[{"type":"function","function":{"name":"f"}}]}`, nil)
	checkError(t, resp, body, "template_render_failed", nil)
	qs.serves(t, "fallback")
}

// TestBadContentLength: net/http refuses an invalid Content-Length before
// any handler runs (400, its own plain-text body); the server goes on.
func TestBadContentLength(t *testing.T) {
	qs := startOn(t, qaModels.Path(t), nil, nil, nil)
	for _, cl := range []string{"abc", "-1", "1, 2"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(qs.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("POST /v1/unload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + cl + "\r\n\r\n{}"))
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("Content-Length %q: %v", cl, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != 400 {
			t.Errorf("Content-Length %q: status %d", cl, resp.StatusCode)
		}
	}
	qs.serves(t, "hello")
}

// TestLoadLockHeldElsewhere is P12 end to end: another holder of the
// model-load lock past the load timeout is 503 insufficient_resources with
// error.holder and Retry-After; once it lets go, the model loads.
func TestLoadLockHeldElsewhere(t *testing.T) {
	dir, err := os.MkdirTemp("", "prism-serve-lock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	other, err := lock.New(lock.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Acquire(t.Context(), "someone-elses-model")
	if err != nil {
		t.Fatal(err)
	}
	ours, err := lock.New(lock.WithDir(dir), lock.WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	qs := startOn(t, qaModels.Path(t), nil, nil, func(string) []prism.Option { return []prism.Option{prism.WithLock(ours)} })
	resp, body := qs.call(t, http.MethodPost, "/v1/chat/completions", `{"model":"hello",`+msg("hi")+`}`, nil)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "30" {
		t.Errorf("status %d Retry-After %q: %v", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	checkError(t, resp, body, "insufficient_resources", nil)
	h, _ := body["error"].(map[string]any)["holder"].(map[string]any)
	if h["model"] != "someone-elses-model" || h["pid"] != float64(os.Getpid()) {
		t.Errorf("holder %v", h)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	qs.serves(t, "hello")
}

// TestBudgetRefusal: a load the memory budget refuses is 503
// insufficient_resources with Retry-After and no holder; a model that fits
// is still served.
func TestBudgetRefusal(t *testing.T) {
	tiny := resources.NewChecker(resources.WithEnabled(true),
		resources.WithMemoryReader(func() (resources.Memory, error) { return resources.Memory{Total: 1 << 20, Available: 1 << 20}, nil }))
	qs := startOn(t, qaModels.Path(t), nil, nil, func(name string) []prism.Option {
		if name == "count" {
			return []prism.Option{prism.WithChecker(tiny)}
		}
		return nil
	})
	resp, body := qs.call(t, http.MethodPost, "/v1/chat/completions", `{"model":"count",`+msg("hi")+`}`, nil)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "30" {
		t.Errorf("status %d Retry-After %q: %v", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	checkError(t, resp, body, "insufficient_resources", nil)
	if _, ok := body["error"].(map[string]any)["holder"]; ok {
		t.Errorf("holder given with none known: %v", body)
	}
	qs.serves(t, "hello")
}

// TestQueueFailuresStillServe: the two server_busy rows (queue full at
// once, queue timeout with Retry-After), and afterwards the lock is free.
func TestQueueFailuresStillServe(t *testing.T) {
	qs := startOn(t, qaModels.Path(t), []engine.ManagerOption{engine.WithMaxQueue(1), engine.WithQueueTimeout(300 * time.Millisecond)}, nil, nil)
	lease, err := qs.mgr.Use(t.Context(), qaModels.Path(t)+"/hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		resp *http.Response
		body map[string]any
	}
	waiter := make(chan answer, 1)
	go func() {
		resp, body := qs.call(t, http.MethodPost, "/v1/chat/completions", `{"model":"hello",`+msg("hi")+`}`, nil)
		waiter <- answer{resp, body}
	}()
	waitFor(t, func() bool { return qs.mgr.Stats().Waiting == 1 })
	resp, body := qs.call(t, http.MethodPost, "/v1/chat/completions", `{"model":"hello",`+msg("hi")+`}`, nil)
	checkError(t, resp, body, "server_busy", nil) // the queue is full: at once
	a := <-waiter
	checkError(t, a.resp, a.body, "server_busy", nil) // waited past the queue timeout
	if a.resp.StatusCode != 503 || a.resp.Header.Get("Retry-After") != "30" {
		t.Errorf("queue timeout: %d Retry-After %q", a.resp.StatusCode, a.resp.Header.Get("Retry-After"))
	}
	lease.Release()
	qs.serves(t, "hello")
	var h struct {
		Busy       bool `json:"busy"`
		QueueDepth int  `json:"queue_depth"`
	}
	getJSON(t, qs, "/health", &h)
	if h.Busy || h.QueueDepth != 0 {
		t.Errorf("health %+v", h)
	}
}
