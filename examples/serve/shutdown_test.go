//go:build cgo

package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGracefulShutdown is P13 on the built binary: SIGINT or SIGTERM while
// a streamed answer is in flight stops accepting, finishes that answer to
// its [DONE], unloads the model and exits 0 with no stack trace.
func TestGracefulShutdown(t *testing.T) {
	dir := models.Path(t)
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startServe(t, "-models-dir", dir)
			body := `{"model":"count","stream":true,"messages":[{"role":"user","content":"Count."}]}`
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			sc := bufio.NewScanner(resp.Body)
			var text strings.Builder
			var finish string
			done, signalled := false, false
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				if data == "[DONE]" {
					done = true
					break
				}
				var chunk struct {
					Choices []struct {
						Delta        struct{ Content string }
						FinishReason string `json:"finish_reason"`
					}
				}
				if err := json.Unmarshal([]byte(data), &chunk); err != nil {
					t.Fatalf("chunk %s: %v", data, err)
				}
				if len(chunk.Choices) > 0 {
					text.WriteString(chunk.Choices[0].Delta.Content)
					finish += chunk.Choices[0].FinishReason
				}
				if !signalled && text.Len() > 0 {
					// The answer is under way: interrupt the server.
					if err := p.Signal(sig); err != nil {
						t.Fatal(err)
					}
					signalled = true
				}
			}
			if !done || finish != "stop" || text.String() != countAnswer(countTo) {
				t.Errorf("in-flight answer cut: [DONE] %v, finish %q, text %q (err %v)", done, finish, text.String(), sc.Err())
			}
			code, err := p.ExitCode(30 * time.Second)
			if err != nil || code != 0 {
				t.Fatalf("exit %d (%v)\n%s", code, err, p.Stderr())
			}
			log := p.Stderr()
			for _, bad := range []string{"panic", "goroutine ", "level=ERROR"} {
				if strings.Contains(log, bad) {
					t.Errorf("log holds %q:\n%s", bad, log)
				}
			}
			for _, want := range []string{"shutting down", "model unloaded"} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			if r, err := http.Get(p.url + "/health"); err == nil {
				r.Body.Close()
				t.Errorf("still answering after exit: %d", r.StatusCode)
			}
		})
	}
}
