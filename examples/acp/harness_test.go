package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/acp"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/scripted"
	"github.com/prism-local/prism/internal/testproc"
)

// The texts the scripted models' tool round trips feed back.
const (
	fileText    = "hello from the editor"
	newText     = "written by Prism"
	thinkScript = "<think>\nThe user greets me.\n</think>\n\nHello from Prism!"
	readAnswer  = "The file says: hello from the editor."
	writeAnswer = "Done: the file is written."
	rejectReply = "Understood: I will not write the file."
)

// agent is examples/acp, built once for the package's tests.
var agent = testproc.Binary{Package: "."}

// workspace is the session's cwd in the tests; nothing in it exists, and
// the agent must never open it (I9).
const workspace = "/nonexistent/prism-acp-workspace"

func TestMain(m *testing.M) {
	code := m.Run()
	agent.Remove()
	models.Remove()
	os.Exit(code)
}

// models are the scripted models: "think" answers with a think block,
// "reader" calls read_file and then answers from the file's text, "writer"
// calls write_file and answers once the write is done, "rejected" makes
// the same call and answers the refusal. A tool model's script is its call
// followed by the exact rest of the next round's prompt, so that round
// continues with the answer (a scripted model continues the longest prefix
// of its script that ends its context).
var models = scripted.Folder{
	Models: []scripted.Model{{Name: "think", Answer: thinkScript, Context: modelContext}},
	Then:   writeToolModels,
}

// modelContext is the context window of every scripted model.
const modelContext = 2048

func writeToolModels(ctx context.Context, w *scripted.Writer, root string) error {
	type round struct {
		name, tool, args, result, answer string
	}
	rounds := []round{
		{"reader", "read_file", `{"path":"notes.txt"}`, fileText, readAnswer},
		{"writer", "write_file", `{"path":"out.txt","content":"` + newText + `"}`, fmt.Sprintf("wrote %d bytes to %s/out.txt", len(newText), workspace), writeAnswer},
		{"rejected", "write_file", `{"path":"out.txt","content":"` + newText + `"}`, "permission denied: the user rejected writing " + workspace + "/out.txt", rejectReply},
	}
	// A placeholder model of each name lets the reference server's handler
	// render the next round's prompt with the real template.
	for _, r := range rounds {
		if err := w.Write(ctx, root, scripted.Model{Name: r.name, Answer: "x", Context: modelContext}); err != nil {
			return err
		}
	}
	render, err := templateServer(root)
	if err != nil {
		return err
	}
	for _, r := range rounds {
		prompt, err := renderNextRound(render, r.name, r.tool, r.args, r.result)
		if err != nil {
			return err
		}
		at := strings.LastIndex(prompt, "<tool_call>")
		if at < 0 {
			return fmt.Errorf("%s: the rendered prompt has no tool call:\n%s", r.name, prompt)
		}
		if err := os.RemoveAll(filepath.Join(root, r.name)); err != nil {
			return err
		}
		if err := w.Write(ctx, root, scripted.Model{Name: r.name, Answer: prompt[at:] + r.answer, Context: modelContext}); err != nil {
			return err
		}
	}
	return nil
}

// templateServer is the reference server's handler over the models in root,
// for POST /apply-template only: it loads no model.
func templateServer(root string) (http.Handler, error) {
	cat, err := catalog.Scan(context.Background(), catalog.Sources{ModelsDirs: []string{root}})
	if err != nil {
		return nil, err
	}
	mgr, err := engine.NewManager(func(context.Context, string) (*engine.Engine, error) {
		return nil, errors.New("rendering needs no model")
	})
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	return server.New(server.Config{Manager: mgr, Catalog: cat, Logger: quiet})
}

// renderNextRound asks the handler for the prompt of the round after a
// tool call.
func renderNextRound(h http.Handler, model, tool, args, result string) (string, error) {
	call := acp.ToolCall{ID: "call_1", Type: "function"}
	call.Function.Name, call.Function.Arguments = tool, args
	body, _ := json.Marshal(map[string]any{
		"model": model,
		"messages": []acp.Message{{Role: "user", Content: "go"}, {Role: "assistant", ToolCalls: []acp.ToolCall{call}},
			{Role: "tool", ToolCallID: "call_1", Content: result}},
		"tools": acp.ToolDefinitions(),
	})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/apply-template", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	var out struct {
		Prompt string `json:"prompt"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		return "", fmt.Errorf("apply-template: %d %s", rec.Code, rec.Body.String())
	}
	return out.Prompt, nil
}

// agentEnv is the environment of an agent over the scripted models, with
// no reference server to reach.
func agentEnv(t *testing.T, extra ...string) []string {
	home := t.TempDir()
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "PRISM_HOME=" + home, "TMPDIR=" + tmp,
		"PRISM_MODELS_DIR=" + models.Path(t), "PRISM_ORT_LIB=" + fixtures.ORTLib(t), "PRISM_DEVICE=cpu",
		"PRISM_BASE_URL=http://127.0.0.1:1/v1", "PRISM_CACHE_DIR=" + os.Getenv("PRISM_CACHE_DIR")}
	if c := os.Getenv("PRISM_CACHE_DIR"); c == "" {
		env = env[:len(env)-1]
		if dir, err := os.UserCacheDir(); err == nil {
			env = append(env, "XDG_CACHE_HOME="+dir)
		}
	}
	return append(env, extra...)
}

// client is a scripted ACP client over the agent's stdio.
type client struct {
	t     *testing.T
	p     *testproc.Process
	stdin io.WriteCloser

	mu      sync.Mutex
	nextID  int
	pending map[string]chan frame
	updates []json.RawMessage
	// serve answers the agent's requests; nil answers -32601.
	serve func(method string, params json.RawMessage) (any, *rpcError)
	wrote map[string]string
	done  chan struct{}
}

// exit waits for the agent to end and returns how it did.
func (c *client) exit() error { return c.p.Wait(30 * time.Second) }

// written returns what the client's fs/write_text_file stored at path.
func (c *client) written(path string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.wrote[path]
	return s, ok
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type frame struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// startAgent runs the built agent with env, optionally under a wrapper
// command (strace). When t ends its input is closed, and it must exit 0.
func startAgent(t *testing.T, env []string, wrapper ...string) *client {
	t.Helper()
	args := append(append([]string{}, wrapper...), agent.Path(t))
	// Not t.Context(): it ends before the cleanup that closes stdin, and
	// the agent's exit status is checked there.
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	p := testproc.Start(t, cmd, testproc.Stdio())
	c := &client{t: t, p: p, stdin: p.Stdin(), pending: map[string]chan frame{}, wrote: map[string]string{}, done: make(chan struct{})}
	go c.read(p.Stdout())
	t.Cleanup(func() {
		_ = c.stdin.Close()
		select {
		case <-c.done:
			// A crash or a race the detector found ends the agent non-zero.
			if err := c.exit(); err != nil {
				t.Errorf("agent exited with %v", err)
			}
		case <-time.After(30 * time.Second):
			p.Kill()
			_ = c.exit()
			t.Errorf("agent did not exit at the end of its input")
		}
		if t.Failed() {
			t.Logf("agent stderr:\n%s", p.Stderr())
		}
	})
	return c
}

func (c *client) read(out io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var f frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			c.t.Errorf("agent wrote a frame that is not JSON: %q", sc.Text())
			continue
		}
		switch {
		case f.Method != "" && f.ID != nil:
			go c.answer(f)
		case f.Method != "":
			c.mu.Lock()
			c.updates = append(c.updates, f.Params)
			c.mu.Unlock()
		default:
			c.mu.Lock()
			ch := c.pending[string(f.ID)]
			delete(c.pending, string(f.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			} else {
				c.t.Errorf("response to no request: %s", sc.Text())
			}
		}
	}
}

func (c *client) answer(f frame) {
	var res any = nil
	var e *rpcError
	if c.serve != nil {
		res, e = c.serve(f.Method, f.Params)
	} else {
		e = &rpcError{Code: -32601, Message: "not served"}
	}
	if e != nil {
		c.send(map[string]any{"jsonrpc": "2.0", "id": f.ID, "error": e})
		return
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": f.ID, "result": res})
}

func (c *client) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.line(string(b))
}

// line writes one raw line to the agent.
func (c *client) line(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = io.WriteString(c.stdin, s+"\n")
}

// start sends a request and returns the channel its answer arrives on.
func (c *client) start(method string, params any) chan frame {
	c.mu.Lock()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	ch := make(chan frame, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	c.send(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	return ch
}

// wait returns a request's answer.
func (c *client) wait(ch chan frame) frame {
	c.t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(60 * time.Second):
		c.t.Fatalf("no answer in 60 s; stderr:\n%s", c.p.Stderr())
	}
	return frame{}
}

// call sends a request and waits for its answer.
func (c *client) call(method string, params any) frame {
	c.t.Helper()
	return c.wait(c.start(method, params))
}

// rawCall sends a raw request line with id and waits for its answer.
func (c *client) rawCall(id int, line string) frame {
	c.t.Helper()
	ch := make(chan frame, 1)
	c.mu.Lock()
	c.pending[fmt.Sprint(id)] = ch
	c.mu.Unlock()
	c.line(line)
	return c.wait(ch)
}

// takeUpdates returns and forgets the session/update params received.
func (c *client) takeUpdates() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, u := range c.updates {
		var n struct {
			Update map[string]any `json:"update"`
		}
		_ = json.Unmarshal(u, &n)
		out = append(out, n.Update)
	}
	c.updates = nil
	return out
}

// handshake initializes with fs capabilities and opens a session on model.
func (c *client) handshake(model string, read, write bool) string {
	c.t.Helper()
	f := c.call("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": read, "writeTextFile": write}}})
	if f.Error != nil {
		c.t.Fatalf("initialize: %+v", f.Error)
	}
	f = c.call("session/new", map[string]any{"cwd": workspace, "mcpServers": []any{}})
	if f.Error != nil {
		c.t.Fatalf("session/new: %+v", f.Error)
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(f.Result, &s)
	if model != "" {
		if f := c.call("session/set_config_option", map[string]any{"sessionId": s.SessionID, "configId": "model", "value": model}); f.Error != nil {
			c.t.Fatalf("set model: %+v", f.Error)
		}
	}
	return s.SessionID
}

func prompt(session, text string) map[string]any {
	return map[string]any{"sessionId": session, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

func stopReason(t *testing.T, f frame) string {
	t.Helper()
	if f.Error != nil {
		t.Fatalf("prompt failed: %+v", f.Error)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(f.Result, &r)
	return r.StopReason
}

// text joins the chunks of one update kind.
func text(updates []map[string]any, kind string) string {
	var b strings.Builder
	for _, u := range updates {
		if u["sessionUpdate"] == kind {
			if c, ok := u["content"].(map[string]any); ok {
				s, _ := c["text"].(string)
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// referenceServer serves the scripted models over HTTP as examples/serve
// does, for the agent's remote path; it returns the API root.
func referenceServer(t *testing.T) string {
	t.Helper()
	cat, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{models.Path(t)}})
	if err != nil {
		t.Fatal(err)
	}
	ort := fixtures.ORTLib(t)
	lockHome := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr, err := engine.NewManager(func(ctx context.Context, key string) (*engine.Engine, error) {
		dir, _ := server.SplitKey(key)
		return prism.Open(ctx, dir, prism.WithDevice("cpu"), prism.WithORTLibrary(ort), prism.WithLogger(logger),
			prism.WithEnv([]string{"PRISM_HOME=" + lockHome}))
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Config{Manager: mgr, Catalog: cat, Loopback: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		_ = mgr.Close()
	})
	return srv.URL + "/v1"
}
