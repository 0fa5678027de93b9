//go:build cgo

package main

import (
	"fmt"
	"net/http"
	"os"
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
	demoRoot string // removed by TestMain
	demoDir  string
	demoErr  error
)

// demoModel writes the built-in demo model (what `make serve` serves) once.
func demoModel(b testing.TB) string {
	b.Helper()
	demoOnce.Do(func() {
		if demoRoot, demoErr = os.MkdirTemp("", "prism-serve-demo-"); demoErr != nil {
			return
		}
		demoDir = filepath.Join(demoRoot, "demo-model")
		out, err := exec.Command("go", "run", "../../internal/cmd/mkmodel", "-demo", "-out", demoDir).CombinedOutput()
		if err != nil {
			demoErr = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if demoErr != nil {
		b.Fatal(demoErr)
	}
	return demoDir
}

func removeDemoModel() {
	if demoRoot != "" {
		_ = os.RemoveAll(demoRoot)
	}
}

// BenchmarkStartToFirstRequest is the time from exec of the built binary
// with -model on the demo model (which loads it before listening) to the
// first chat completion answered. Stopping the process is not timed.
func BenchmarkStartToFirstRequest(b *testing.B) {
	serveBinary.Path(b)
	model, env := demoModel(b), serveEnv(b)
	body := `{"model":"demo-model","messages":[{"role":"user","content":"Hi!"}],"max_tokens":1}`
	for range b.N {
		p := launch(b, env, "-model", model)
		resp, err := http.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d\n%s", resp.StatusCode, p.Stderr())
		}
		b.StopTimer()
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
