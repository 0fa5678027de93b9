//go:build cgo

package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

// TestOpenAINodeSDK drives the running binary with the official openai npm
// package (pinned in internal/fixtures/node): chat streamed and not,
// reasoning, a streamed tool call, structured output, the usage chunk and
// the typed errors (testdata/openai.mjs says what it checks).
func TestOpenAINodeSDK(t *testing.T) {
	script := fixtures.NodeScript(t, "testdata/openai.mjs")
	if _, err := exec.LookPath("node"); err != nil {
		fixtures.Unavailable(t, "node is not on PATH: %v", err)
	}
	p := startServe(t, "-models-dir", models.Path(t))
	cmd := exec.CommandContext(t.Context(), "node", script)
	cmd.Env = append(cmd.Environ(), "PRISM_URL="+p.url)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("node %s: %v\n%s\nserver log:\n%s", script, err, out, p.Stderr())
	}
}
