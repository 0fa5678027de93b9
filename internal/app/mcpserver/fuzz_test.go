package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCheck: the framing guard never panics, and what it lets through is
// a JSON object while what it answers is one JSON-RPC error line.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","method":"x","params":[1]}`,
		`[1]`, `nul`, `{"id":{},"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":"a","result":{}}`, `"x"`, `{"jsonrpc":"2.0","id":-1,"method":7}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		answer := check(line)
		switch {
		case answer == nil:
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("passed on %q: %v", line, err)
			}
		case len(answer) > 0:
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct{ Code int }
			}
			if err := json.Unmarshal(answer, &m); err != nil || m.JSONRPC != "2.0" || m.Error.Code >= -32000 || answer[len(answer)-1] != '\n' {
				t.Fatalf("answer %q to %q", answer, line)
			}
		}
	})
}

// FuzzFilterLines: whole streams through the guard.
func FuzzFilterLines(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nbad\n[1,2]\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var pass, reply bytes.Buffer
		if err := filterLines(bytes.NewReader(in), &pass, &reply); err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(pass.Bytes(), []byte("\n")), []byte("\n")) {
			if len(l) > 0 && check(l) != nil {
				t.Fatalf("let through %q", l)
			}
		}
	})
}
