//go:build cgo

package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/testproc"
)

// A busy -addr stops the start before any model loads, naming the address
// and how to choose another.
func TestBusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	cmd := exec.Command(serveBinary.Path(t), "-addr", addr, "-device", "cpu", "-ollama", "off", "-model", filepath.Join(models.Path(t), "think"))
	cmd.Env = serveEnv(t)
	p := testproc.Start(t, cmd)
	code, err := p.ExitCode(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	log := p.Stderr()
	if code == 0 {
		t.Errorf("exit 0 on a busy address:\n%s", log)
	}
	for _, want := range []string{addr, "address already in use", "-addr HOST:PORT", "ADDR=HOST:PORT with make serve"} {
		if !strings.Contains(log, want) {
			t.Errorf("the error does not say %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "loading model") {
		t.Errorf("the model began loading before the address was bound:\n%s", log)
	}
}

// The first run, as `make serve` starts it (the demo model, device auto,
// Ollama at its default URL with nothing there), on a machine without an
// NVIDIA GPU: no WARN and no ERROR, one INFO line for the CPU and one for
// Ollama, no fallback_reason, and a client that leaves is no error.
func TestQuietFirstRun(t *testing.T) {
	p := launch0(t, serveEnv(t), "-addr", "127.0.0.1:0", "-model", demoModel(t))
	if strings.Contains(p.Stderr(), "a GPU is visible") {
		t.Skip("NVML sees a GPU on this machine: the case is a machine without one")
	}
	resp, err := http.Get(p.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]any{}
	err = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["fallback_reason"]; ok || raw["device"] != "cpu" {
		t.Errorf("/health %v", raw)
	}
	chat := func(model string, stream bool) *http.Response {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"Hi!"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
		resp, err := http.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := chat("demo-model", false); r.StatusCode != 200 {
		t.Errorf("chat: %s", r.Status)
	} else {
		r.Body.Close()
	}
	r := chat("no-such-model", false)
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.NewDecoder(r.Body).Decode(&e)
	r.Body.Close()
	if r.StatusCode != 404 || e.Error.Code != "model_not_found" || strings.Contains(e.Error.Message, "Ollama") {
		t.Errorf("unknown model: %s %+v", r.Status, e)
	}
	// A client that leaves mid-stream.
	r = chat("demo-model", true)
	buf := make([]byte, 64)
	_, _ = r.Body.Read(buf)
	r.Body.Close()

	if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Stderr())
	}
	log := p.Stderr()
	for _, bad := range []string{"level=WARN", "level=ERROR", "fallback_reason"} {
		if strings.Contains(log, bad) {
			t.Errorf("the first run logged %q:\n%s", bad, log)
		}
	}
	for _, want := range []string{`level=INFO msg="no NVIDIA GPU: running on the CPU"`, `level=INFO msg="no Ollama answering`} {
		if strings.Count(log, want) != 1 {
			t.Errorf("the log says %q %d times, want once:\n%s", want, strings.Count(log, want), log)
		}
	}
}

// launch0 starts the binary with exactly args (launch adds -device cpu)
// and returns once it serves.
func launch0(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	cmd := exec.Command(serveBinary.Path(t), args...)
	cmd.Env = env
	p := testproc.Start(t, cmd)
	t.Cleanup(func() { _ = p.Stop(syscall.SIGKILL, 10*time.Second) })
	m, err := p.WaitLine(servingLine, 2*time.Minute)
	if err != nil {
		t.Fatalf("serve did not start serving: %v\n%s", err, p.Stderr())
	}
	return &running{Process: p, url: m[1]}
}

// The demo model `make serve` serves shows what Prism does: its reasoning
// apart from its answer, a tool call when tools are offered, valid JSON
// under response_format; /v1/models says it is the demo.
func TestDemoModel(t *testing.T) {
	p := launch(t, serveEnv(t), "-model", demoModel(t), "-ollama", "off")
	t.Cleanup(func() { _ = p.Stop(syscall.SIGTERM, 30*time.Second) })
	post := func(body string) map[string]any {
		t.Helper()
		resp, err := http.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %s %v %v", body, resp.Status, out, err)
		}
		return out["choices"].([]any)[0].(map[string]any)
	}
	const hi = `"model":"demo-model","messages":[{"role":"user","content":"Hi!"}]`
	weather := `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	search := `{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"query":{"type":"string","minLength":3},"limit":{"type":"integer","minimum":1}},"required":["query","limit"],"additionalProperties":false}}}`

	c := post(`{` + hi + `}`)
	msg := c["message"].(map[string]any)
	if r, _ := msg["reasoning_content"].(string); !strings.Contains(r, "scripted thought") || !strings.HasPrefix(strings.TrimSpace(msg["content"].(string)), "Hello! I am Prism's built-in demo model") {
		t.Errorf("plain answer %v", msg)
	}
	for _, tt := range []struct {
		tools, choice, name string
		valid               func(args map[string]any) bool
	}{
		{weather, `"auto"`, "get_weather", func(a map[string]any) bool { return a["city"] == "Paris" }},
		{search, `"required"`, "search", func(a map[string]any) bool {
			q, _ := a["query"].(string)
			l, _ := a["limit"].(float64)
			return len(q) >= 3 && l >= 1 && len(a) == 2
		}},
	} {
		c := post(`{` + hi + `,"tools":[` + tt.tools + `],"tool_choice":` + tt.choice + `}`)
		calls, _ := c["message"].(map[string]any)["tool_calls"].([]any)
		if c["finish_reason"] != "tool_calls" || len(calls) != 1 {
			t.Errorf("tools %s: %v", tt.name, c)
			continue
		}
		fn := calls[0].(map[string]any)["function"].(map[string]any)
		var args map[string]any
		if err := json.Unmarshal([]byte(fn["arguments"].(string)), &args); fn["name"] != tt.name || err != nil || !tt.valid(args) {
			t.Errorf("call %v (%v)", fn, err)
		}
	}
	schema := `{"type":"object","properties":{"city":{"type":"string"},"temperature":{"type":"integer"},"sunny":{"type":"boolean"}},"required":["city","temperature","sunny"],"additionalProperties":false}`
	for _, format := range []string{`{"type":"json_object"}`, `{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":` + schema + `}}`} {
		c := post(`{` + hi + `,"response_format":` + format + `}`)
		var v map[string]any
		content, _ := c["message"].(map[string]any)["content"].(string)
		if err := json.Unmarshal([]byte(content), &v); err != nil || c["finish_reason"] != "stop" {
			t.Errorf("%s: content %q finish %v (%v)", format, content, c["finish_reason"], err)
		}
		if strings.Contains(format, "json_schema") && (len(v) != 3 || v["sunny"] == nil) {
			t.Errorf("%s: %v", format, v)
		}
	}
	resp, err := http.Get(p.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Data []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) != 1 || list.Data[0]["demo"] != true {
		t.Errorf("/v1/models %v (%v)", list, err)
	}
}
