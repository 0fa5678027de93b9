package acp

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// FuzzServe: no input crashes or hangs the agent; the connection always
// ends at the end of its input.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"x","prompt":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/set_config_option","params":{"sessionId":"x","configId":"model","value":"m"}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":1e400}}`,
		`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"prompt":null}}`,
		"[[[[", "{}", "\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		g := &fakeGen{models: []string{"m"}}
		err := Serve(context.Background(), Config{Generator: g, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
			strings.NewReader(input), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
	})
}
