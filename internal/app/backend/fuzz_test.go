package backend

import (
	"bytes"
	"testing"
)

// FuzzReadEvents feeds arbitrary bodies to the event-stream reader: it
// must never panic, and every event it hands on is a data payload.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data:x\ndata:y\n\n: comment\nevent: e\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"m\"}}\n\n"))
	f.Add([]byte("data: [DONE]"))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = readEvents(bytes.NewReader(body), func(data []byte) error {
			if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
				t.Fatal("[DONE] handed on as an event")
			}
			return nil
		})
	})
}
