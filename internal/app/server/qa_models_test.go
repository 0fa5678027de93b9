//go:build cgo

package server_test

// Scripted models for the failure-mode, load and disconnect tests, beside
// the ones of server_test.go: a long answer, a repeating one, a folder that
// cannot be loaded and a template that refuses tools.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/internal/scripted"
)

// countAnswer counts to n: long, and with no repeating cycle the loop
// guard would stop.
func countAnswer(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d, ", i)
	}
	return b.String() + "done."
}

// noToolsTemplate renders plain chats and raises on a request with tools,
// as a template whose tool section needs fields the caller did not send.
const noToolsTemplate = `{%- if tools %}{{ raise_exception('this template cannot render the tools it was given') }}{% endif -%}
{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}`

// alwaysFailsTemplate fails on every request.
const alwaysFailsTemplate = `{{ raise_exception('this template always fails') }}`

// qaModels are "hello" (a think block and a short answer), "count"
// (countAnswer(150)), "loop" (one token 100 times), "chat" (hello's answer
// in a 4096-token window), "agent" (toolAnswer in a 4096-token window),
// "random" (random weights, no script), and
// hello again as "broken" (its graph is not
// ONNX), "notools" (under noToolsTemplate) and "fallback" (under
// alwaysFailsTemplate), written once.
var qaModels = scripted.Folder{
	Models: []scripted.Model{
		{Name: "hello", Answer: thinkAnswer},
		{Name: "count", Answer: countAnswer(150)},
		{Name: "chat", Answer: thinkAnswer, Context: 4096}, // room for a long conversation
		{Name: "agent", Answer: toolAnswer, Context: 4096}, // a tool call every turn, for agent loops
		// No script: random weights answer every prompt differently.
		{Name: "random", Answer: "unscripted", Configure: func(c *onnxgen.Config) { c.Script, c.EOS = nil, []int{c.ScriptEOS} }},
	},
	Then: writeQAVariants,
}

func writeQAVariants(ctx context.Context, w *scripted.Writer, root string) error {
	loop := w.Encode(" again")[:1]
	for range 99 {
		loop = append(loop, loop[0])
	}
	if err := w.Write(ctx, root, scripted.Model{Name: "loop", Tokens: loop}); err != nil {
		return err
	}
	// The others are hello with one file changed (the rest linked).
	hello := filepath.Join(root, "hello")
	variants := []struct {
		name, file string
		change     func(path string) error
	}{
		{"broken", onnxgen.OptimumModelFile, func(p string) error { return os.WriteFile(p, []byte("not an onnx graph"), 0o644) }},
		{"notools", "tokenizer_config.json", func(p string) error { return setTemplate(p, noToolsTemplate) }},
		{"fallback", "tokenizer_config.json", func(p string) error { return setTemplate(p, alwaysFailsTemplate) }},
	}
	for _, v := range variants {
		if err := linkCopy(hello, filepath.Join(root, v.name), v.file); err != nil {
			return err
		}
		if err := v.change(filepath.Join(root, v.name, v.file)); err != nil {
			return err
		}
	}
	return nil
}

// linkCopy makes dst a copy of the model folder src whose files are
// symbolic links, except except, which is copied so it can be changed.
func linkCopy(src, dst, except string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case rel == filepath.FromSlash(except):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		default:
			return os.Symlink(path, out)
		}
	})
}

// setTemplate replaces the chat template of a tokenizer_config.json.
func setTemplate(path, tmpl string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	cfg["chat_template"] = tmpl
	out, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// qaServer is a test server (newServer) with the HTTP client for raw
// requests and the folder of its load lock.
type qaServer struct {
	*testServer
	lockDir string
	http    *http.Client // its own transport, so connections close with the test
}

// startOn is newServer, stopped when t ends.
func startOn(t testing.TB, dir string, mopts []engine.ManagerOption, mutate func(*server.Config), open func(name string) []prism.Option) *qaServer {
	t.Helper()
	qs, stop := newServer(t, dir, mopts, mutate, open)
	t.Cleanup(stop)
	return qs
}

// call sends a request with qs's client and returns the status, the
// headers and the decoded JSON body (nil when it is not JSON).
func (qs *qaServer) call(t testing.TB, method, path, body string, header http.Header) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, qs.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := qs.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp, out
}

// serves checks that the server still answers a chat completion on model.
func (qs *qaServer) serves(t testing.TB, model string) {
	t.Helper()
	resp, body := qs.call(t, http.MethodPost, "/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`, nil)
	if resp.StatusCode != 200 {
		t.Errorf("the server no longer serves %s: %d %v", model, resp.StatusCode, body)
	}
	qs.settled(t)
}

// getJSON decodes the answer to GET path into v.
func getJSON(t testing.TB, qs *qaServer, path string, v any) {
	t.Helper()
	resp, err := qs.http.Get(qs.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// settled waits (up to 10 s) until the engine lock is free and no one
// waits: a handler releases its lease just after its answer is written.
func (qs *qaServer) settled(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := qs.mgr.Stats()
		if !st.InUse && st.Waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine lock leaked: in use %v, %d waiting", st.InUse, st.Waiting)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
