package ollama_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/tools"
)

// bodyTransport answers every request with status and body, without a network.
type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Header: http.Header{"Content-Type": {"application/x-ndjson"}},
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: r}, nil
}

// FuzzChatStream: whatever a daemon sends, Chat and the stream end (a
// complete answer or a backend_unavailable error, never a panic or a
// silent truncation), and the events made of it are well formed: every
// tool call has a name and arguments that are one JSON object.
func FuzzChatStream(f *testing.F) {
	for _, s := range []string{
		"{\"message\":{\"role\":\"assistant\",\"content\":\"<think>a</think>b\"},\"done\":false}\n{\"done\":true,\"done_reason\":\"stop\",\"eval_count\":2}\n",
		"{\"message\":{\"thinking\":\"t\",\"content\":\"\"}}\n{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":[1,{}]}}}]},\"done\":true}\n",
		"{\"error\":\"boom\"}\n", "{\"message\":{\"content\":\"x\"}}\n", "{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"\",\"arguments\":1}}]}}\n",
		"", "\n\n", "{\"done\":true}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ollama.New("http://ollama.invalid", ollama.WithHTTPClient(&http.Client{Transport: bodyTransport{200, body}}))
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Chat(t.Context(), ollama.ChatRequest{Model: "m"})
		if err != nil {
			if errcode.Of(err) != errcode.BackendUnavailable {
				t.Fatalf("Chat: %v", err)
			}
			return
		}
		defer st.Close()
		ev := ollama.NewEvents(nil)
		var all []tools.Event
		for st.Next() {
			all = ev.Feed(all, st.Chunk())
		}
		all = ev.Flush(all)
		if err := st.Err(); err != nil && errcode.Of(err) != errcode.BackendUnavailable || err == nil && !st.Done() {
			t.Fatalf("ended with %v, done %v", err, st.Done())
		}
		res := tools.Assemble(all, ev.ReasoningSeen())
		for _, call := range res.Calls {
			var obj map[string]any
			if call.Name == "" || json.Unmarshal([]byte(call.Arguments), &obj) != nil {
				t.Fatalf("call %+v", call)
			}
		}
	})
}
