package wire_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/prism-local/prism/internal/app/wire"
)

var codes = map[string]bool{wire.CodeInvalidRequest: true, wire.CodeUnknownParameter: true, wire.CodeUnsupportedParameter: true}

// checkDecodeError holds every decoder to its contract: a failure is a
// 400 *wire.Error with one of the package's codes and a message.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T) is not a *wire.Error", err, err)
	}
	if we.Status != http.StatusBadRequest || !codes[we.Code()] || we.Message == "" {
		t.Fatalf("error %+v", we)
	}
}

func FuzzDecodeChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":["x"],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"1"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}},"n":1,"logit_bias":null}`,
		`{"model":"m","messages":null}`, `{}`, `[]`, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := wire.DecodeChat(body)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if req.Model == "" || len(req.Messages) == 0 {
			t.Fatalf("accepted %s", body)
		}
		for _, m := range req.Messages {
			if m.Role == "" {
				t.Fatalf("accepted a message without a role: %s", body)
			}
		}
		if len(req.RawTools()) != len(req.Tools) || req.Limit() < 0 {
			t.Fatalf("accepted %s", body)
		}
	})
}

func FuzzDecodeCompletion(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hi"}`, `{"model":"m","prompt":[1,2,3],"max_tokens":4}`, `{"model":"m","prompt":[[1]]}`,
		`{"model":"m","prompt":["a"],"stream":true,"stream_options":{"include_usage":false},"logprobs":2,"echo":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := wire.DecodeCompletion(body)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if req.Model == "" || (!req.Prompt.IsIDs && req.Prompt.Text == "") || (req.Prompt.IsIDs && len(req.Prompt.IDs) == 0) || req.Limit() < 1 {
			t.Fatalf("accepted %s: %+v", body, req)
		}
	})
}

func FuzzDecodeResponses(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"}]}`,
		`{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"s","schema":{}}}}`,
		`{"model":"m","input":"x","store":true}`, `{"model":"m","input":[{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"t"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := wire.DecodeResponses(body)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if req.Model == "" || (req.Store != nil && *req.Store) {
			t.Fatalf("accepted %s", body)
		}
		if _, err := req.ChatToolChoice(); err != nil {
			t.Fatalf("accepted a tool_choice it cannot convert: %s", body)
		}
		_ = req.Messages()
		_ = req.ChatTools()
	})
}
