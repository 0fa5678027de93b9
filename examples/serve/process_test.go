//go:build cgo

package main

// The built serve binary, started as a user starts it, on scripted models
// that run on the real ONNX Runtime. The binary is built once per package
// run; the models are written once.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/scripted"
	"github.com/prism-local/prism/internal/testproc"
)

const (
	thinkAnswer = "<think>\nThe user greets me.\n</think>\n\nHello there, friend."
	jsonAnswer  = `{"city": "Paris", "temperature": 21}`
	toolAnswer  = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>"
)

// countAnswer is a long answer with no repeating cycle (the loop guard
// leaves it alone), so a generation is still running when a test acts.
func countAnswer(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d, ", i)
	}
	return b.String() + "done."
}

// countTo is how far the "count" model counts.
const countTo = 150

// serveBinary is examples/serve, built once for the package's tests.
var serveBinary = testproc.Binary{Package: "."}

// models are the scripted models "think", "tool", "json", "count",
// "calls-loop" and "cycle" (the real Qwen3 tokenizer and chat template),
// written once.
var models = scripted.Folder{Models: []scripted.Model{
	{Name: "think", Answer: thinkAnswer},
	{Name: "tool", Answer: toolAnswer},
	{Name: "json", Answer: jsonAnswer},
	{Name: "count", Answer: countAnswer(countTo)},
	{Name: "calls-loop", Answer: repeatedCalls},
	{Name: "cycle", Answer: cycleAnswer},
}}

func TestMain(m *testing.M) {
	code := m.Run()
	serveBinary.Remove()
	models.Remove()
	hubModels.Remove()
	pullBinary.Remove()
	removeDemoModel()
	os.Exit(code)
}

// running is a started serve binary and the URL it serves.
type running struct {
	*testproc.Process
	url string // http://HOST:PORT, without /v1
}

var servingLine = regexp.MustCompile(`msg=serving url=(http://\S+)/v1`)

// serveEnv is the environment of a started binary: this one without its
// PRISM_* settings, a private PRISM_HOME (its lock folder and models) and
// an empty Hugging Face cache, so nothing of the machine leaks in.
func serveEnv(t testing.TB) []string {
	t.Helper()
	home := t.TempDir()
	return append(testproc.Environ("PRISM_", "HF_"), "PRISM_ORT_LIB="+fixtures.ORTLib(t), "PRISM_HOME="+home, "HF_HUB_CACHE="+filepath.Join(home, "hub"))
}

// startServe runs the binary with args on a free loopback port and waits
// until it serves. When t ends, a binary still running gets SIGTERM and
// must exit 0.
func startServe(t testing.TB, args ...string) *running {
	t.Helper()
	p := launch(t, serveEnv(t), args...)
	t.Cleanup(func() {
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("stopping serve: %v\n%s", err, p.Stderr())
		}
	})
	return p
}

// launch starts the binary with env and args and returns once its
// "serving" line names the URL.
func launch(t testing.TB, env []string, args ...string) *running {
	t.Helper()
	cmd := exec.Command(serveBinary.Path(t), append([]string{"-addr", "127.0.0.1:0", "-device", "cpu"}, args...)...)
	cmd.Env = env
	p := testproc.Start(t, cmd)
	m, err := p.WaitLine(servingLine, 2*time.Minute)
	if err != nil {
		t.Fatalf("serve did not start serving: %v", err)
	}
	return &running{Process: p, url: m[1]}
}
