//go:build cgo

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/hubtest"
	"github.com/prism-local/prism/internal/testproc"
)

var pullBinary = testproc.Binary{Package: "github.com/prism-local/prism/examples/pull"}

// The three commands docs/getting-started.md opens with — pull, serve,
// ask — run as written against a fake hub holding the model they name:
// the pull lands in the Hugging Face cache, serve finds it by name, and
// the curl line gets an answer.
func TestGettingStartedCommands(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skipf("curl is not on PATH: %v", err)
	}
	doc, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if !ok || len(lines) != 3 || !strings.HasPrefix(lines[0], "go run ./examples/pull ") ||
		!strings.Contains(lines[1], "go run ./examples/serve ") || !strings.HasPrefix(lines[2], "curl ") {
		t.Fatalf("getting-started.md does not open with pull, serve and curl:\n%s", block)
	}
	pullArgs := strings.Fields(strings.TrimPrefix(lines[0], "go run ./examples/pull "))
	_, serveArgs, _ := strings.Cut(lines[1], "go run ./examples/serve ")
	repo, _, _ := strings.Cut(pullArgs[0], ":")

	h := hubtest.New(t)
	h.AddModel(t, repo, filepath.Join(hubModels.Path(t), "Hub-ONNX"))
	env := append(serveEnv(t), "HF_ENDPOINT="+h.URL)

	pull := exec.CommandContext(t.Context(), pullBinary.Path(t), pullArgs...)
	pull.Env = env
	if out, err := pull.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", lines[0], err, out)
	}
	p := launch(t, env, strings.Fields(serveArgs)...)
	t.Cleanup(func() { _ = p.Stop(os.Interrupt, 0) })
	ask := strings.ReplaceAll(lines[2], "http://127.0.0.1:8080", p.url)
	out, err := exec.CommandContext(t.Context(), "sh", "-c", ask).CombinedOutput()
	if err != nil || !strings.Contains(string(out), hubAnswer) {
		t.Fatalf("%s: %v\n%s\nserver log:\n%s", ask, err, out, p.Stderr())
	}
}
