package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// fuzzPaths are the endpoints that read a body.
var fuzzPaths = []string{"/v1/chat/completions", "/v1/completions", "/apply-template", "/tokenize", "/detokenize", "/v1/unload", "/v1/embeddings", "/v1/responses"}

// fuzzSeeds are the bad-request tables' bodies (TestBadRequests,
// TestFailureModes) and good ones, by path index.
var fuzzSeeds = []struct {
	path int
	body string
}{
	{0, fakeChat + `}`},
	{0, fakeChat + `,"stream":true,"stream_options":{"include_usage":true}}`},
	{0, fakeChat + `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"tool_choice":"required"}`},
	{0, fakeChat + `,"tools":[{"type":"function","function":{"name":"get_weather"}}],"tool_choice":{"type":"function","function":{"name":"nope"}}}`},
	{0, fakeChat + `,"response_format":{"type":"json_object"},"stream":true}`},
	{0, fakeChat + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"nope"}}}}`},
	{0, fakeChat + `,"temprature":1}`},
	{0, fakeChat + `,"n":2}`},
	{0, fakeChat + `,"temperature":3}`},
	{0, fakeChat + `,"top_p":2,"seed":1}`},
	{0, fakeChat + `,"max_tokens":0}`},
	{0, fakeChat + `,"max_tokens":3,"max_completion_tokens":4}`},
	{0, fakeChat + `,"stop":["l",""],"max_tokens":5}`},
	{0, fakeChat + `,"logprobs":true,"top_logprobs":2}`},
	{0, fakeChat + `,"reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":false}}`},
	{0, fakeChat + `,"chat_template_kwargs":[1]}`},
	{0, fakeChat + `,"stream_options":{"include_usage":true}}`},
	{0, `{"model":"fake","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"1"}]}`},
	{0, `{"model":"fake","messages":[{"role":"assistant","content":"x","reasoning_content":"a","reasoning":"b"}]}`},
	{0, `{"model":"fake","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`},
	{0, `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`},
	{0, `{"model":"fake:","messages":[{"role":"user","content":"hi"}]}`},
	{0, `{"messages":[{"role":"user","content":"hi"}]}`},
	{0, `{"model":"fake","messages":[{"role":"user","content":"` + strings.Repeat("word ", 1000) + `"}]}`},
	{0, ``}, {0, `{`}, {0, `[1]`}, {0, `{} {}`}, {0, "{\"model\":\"\xff\"}"},
	{1, `{"model":"fake","prompt":"Once","max_tokens":5,"echo":true,"stream":true}`},
	{1, `{"model":"fake","prompt":[1,2,3]}`},
	{1, `{"model":"fake","prompt":"hi","n":2}`},
	{1, `{"model":"fake","prompt":""}`},
	{2, fakeChat + `,"tools":[{"type":"function","function":{"name":"get_weather"}}]}`},
	{3, `{"model":"fake","content":"Hello world","with_pieces":true,"add_special":true}`},
	{3, `{"model":"fake","content":"x","extra":1}`},
	{4, `{"model":"fake","tokens":[9707,1879]}`},
	{4, `{"model":"fake","tokens":[-1]}`},
	{5, ``}, {5, `{}`}, {5, `[1]`},
	{6, `{"model":"fake","input":"hi"}`},
	{7, `{"model":"fake","input":"hi"}`},
	{7, `{"model":"fake","input":"hi","stream":true,"max_output_tokens":3,"reasoning":{"effort":"low"}}`},
	{7, `{"model":"fake","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"weather?"}]},{"type":"function_call","call_id":"c","name":"get_weather","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"sunny"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"tool_choice":"auto","stream":true}`},
	{7, `{"model":"fake","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}},"stream":true}`},
	{7, `{"model":"fake","input":"hi","previous_response_id":"resp_1"}`},
	{7, `{"model":"fake","input":"hi","store":true}`},
	{7, `{"model":"fake","input":[{"type":"reasoning","summary":[]}]}`},
	{7, `{"model":"fake","input":"hi","stream":true,"top_logprobs":3,"include":["message.output_text.logprobs"]}`},
	{7, `{"model":"fake","input":"hi","include":["reasoning.encrypted_content","message.output_text.logprobs"],"text":{"format":{"type":"json_object"}}}`},
	{7, `{"model":"fake","input":"hi","top_logprobs":21}`},
	{7, `{"model":"fake","input":"hi","include":["file_search_call.results"]}`},
}

// FuzzHandlers sends arbitrary bodies to the server's endpoints over the
// fake model: never a panic; always a JSON error with its fields, a JSON
// answer or a well-formed event stream; the engine lock free afterwards;
// no goroutine left when the fuzzing ends.
func FuzzHandlers(f *testing.F) {
	opts := goleak.IgnoreCurrent()
	f.Cleanup(func() { goleak.VerifyNone(f, opts) }) // runs after newFake's cleanup
	fs := newFake(f, "<think>Hm.</think>Hello, <b>world</b>! "+`{"a": [1, "x"]}`, nil)
	for _, s := range fuzzSeeds {
		f.Add(uint8(s.path), []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, path uint8, body []byte) {
		p := fuzzPaths[int(path)%len(fuzzPaths)]
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, p, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		fs.handler.ServeHTTP(rec, req)
		checkAnswer(t, rec)
		if st := fs.mgr.Stats(); st.InUse || st.Waiting != 0 {
			t.Fatalf("%s %q left the engine in use %v, %d waiting", p, body, st.InUse, st.Waiting)
		}
	})
}

// checkAnswer checks that a recorded answer is a JSON error with message,
// type and code, a JSON value, or an event stream of JSON data events
// ending in [DONE], an error event, or (the Responses API) a
// response.completed, response.incomplete or response.failed event.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	ct, body := rec.Header().Get("Content-Type"), rec.Body.Bytes()
	switch {
	case ct == "application/json":
		if !json.Valid(body) {
			t.Fatalf("status %d: invalid JSON %q", rec.Code, body)
		}
		if rec.Code >= 400 {
			var e struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == "" {
				t.Fatalf("status %d: not an error body: %s (%v)", rec.Code, body, err)
			}
			if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("server error on a request: %s", body)
			}
		}
	case strings.HasPrefix(ct, "text/event-stream"):
		if rec.Code != http.StatusOK {
			t.Fatalf("event stream with status %d", rec.Code)
		}
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		last := ""
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("event %q is not JSON", data)
			}
			last = data
		}
		var end struct{ Type string }
		_ = json.Unmarshal([]byte(last), &end)
		responsesEnd := end.Type == "response.completed" || end.Type == "response.incomplete" || end.Type == "response.failed"
		if last != "[DONE]" && !strings.HasPrefix(last, `{"error"`) && !responsesEnd {
			t.Fatalf("stream ends with %q", last)
		}
	default:
		t.Fatalf("status %d, Content-Type %q: %q", rec.Code, ct, body)
	}
}
