//go:build cgo

package main

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	demoOnce sync.Once
	demoDir  string
	demoErr  error
)

// demoModel writes the built-in demo model (what `make serve` serves) once.
func demoModel(b testing.TB) string {
	b.Helper()
	dir := root(b)
	demoOnce.Do(func() {
		demoDir = filepath.Join(dir, "demo-model")
		out, err := exec.Command("go", "run", "../../internal/cmd/mkmodel", "-demo", "-out", demoDir).CombinedOutput()
		if err != nil {
			demoErr = err
			b.Logf("%s", out)
		}
	})
	if demoErr != nil {
		b.Fatal(demoErr)
	}
	return demoDir
}

// BenchmarkStartToFirstRequest is the time from exec of the built binary
// with -model on the demo model (which loads it before listening) to the
// first chat completion answered. Stopping the process is not timed.
func BenchmarkStartToFirstRequest(b *testing.B) {
	bin, model, env := binary(b), demoModel(b), serveEnv(b)
	body := `{"model":"demo-model","messages":[{"role":"user","content":"Hi!"}],"max_tokens":1}`
	for range b.N {
		p, err := launch(bin, env, "-model", model)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := http.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d\n%s", resp.StatusCode, p.stderr)
		}
		b.StopTimer()
		if err := p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
