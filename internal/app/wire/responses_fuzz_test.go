package wire

import "testing"

// FuzzResponsesChatRequest holds ChatRequest to its promise: the chat form
// of every Responses request the decoder accepts is a chat request the chat
// decoder would accept too, so the shared generation path never sees a
// conversation it was not built for, and it asks for logprobs exactly
// when the Responses request does.
func FuzzResponsesChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi","instructions":"be brief"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call","call_id":"d","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"},{"role":"assistant","content":[{"type":"output_text","text":"ok"}]}]}`,
		`{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false}`,
		`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"},"strict":true}},"reasoning":{"effort":"high"},"max_output_tokens":5}`,
		`{"model":"m","input":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"t"}]},{"role":"assistant","content":""}]}`,
		`{"model":"m","input":[{"role":"developer","content":"d"}],"text":{"format":{"type":"text"}},"temperature":0}`,
		`{"model":"m","input":"x","top_logprobs":5,"include":["reasoning.encrypted_content","message.output_text.logprobs"]}`,
		`{"model":"m","input":"x","top_logprobs":0,"include":["message.output_text.logprobs"]}`,
		`{"model":"m","input":"x","top_logprobs":20}`,
		`{"model":"m","input":"x","top_logprobs":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeResponses(body)
		if err != nil {
			return
		}
		chat, err := req.ChatRequest()
		if err != nil {
			t.Fatalf("accepted %s, but its chat form fails: %v", body, err)
		}
		if err := chat.validate(); err != nil {
			t.Fatalf("accepted %s, but its chat form is refused: %v (%+v)", body, err, chat)
		}
		if len(chat.Tools) != len(req.Tools) || chat.Limit() < 0 || chat.Logprobs != req.WantsLogprobs() {
			t.Fatalf("chat form of %s: %+v", body, chat)
		}
	})
}
