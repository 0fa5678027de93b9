//go:build cgo

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/hubtest"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/internal/scripted"
)

const hubAnswer = "Pulled from the hub and served."

// hubModels is a scripted model (the real Qwen3 tokenizer and template)
// exported as onnx-community does, with two dtype variants.
var hubModels = scripted.Folder{Models: []scripted.Model{
	{Name: "Hub-ONNX", Answer: hubAnswer, Configure: func(c *onnxgen.Config) { c.Variants = []string{"fp16", "q4"} }},
}}

// With -pull, a -model the machine lacks is pulled from the hub first;
// then the server lists it and answers with it, and POST /api/pull
// streams another pull whose model is served at once.
func TestServePullsTheModelFirst(t *testing.T) {
	h := hubtest.New(t)
	dir := filepath.Join(hubModels.Path(t), "Hub-ONNX")
	h.AddModel(t, "onnx-community/Hub-ONNX", dir)
	h.AddModel(t, "onnx-community/Second-ONNX", dir)
	p := launch(t, append(serveEnv(t), "HF_ENDPOINT="+h.URL), "-pull", "-model", "onnx-community/Hub-ONNX:q4")
	t.Cleanup(func() {
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("stopping serve: %v\n%s", err, p.Stderr())
		}
	})
	if !strings.Contains(p.Stderr(), "msg=pulled model=onnx-community/Hub-ONNX") || !strings.Contains(p.Stderr(), "variant=q4") {
		t.Fatalf("no pull logged:\n%s", p.Stderr())
	}
	if ids := modelIDs(t, p.url); !strings.Contains(ids, "onnx-community/Hub-ONNX") {
		t.Fatalf("/v1/models: %s", ids)
	}
	if got := chat(t, p.url, "onnx-community/Hub-ONNX"); got != hubAnswer {
		t.Fatalf("answer %q", got)
	}
	resp, err := http.Post(p.url+"/api/pull", "application/json", strings.NewReader(`{"model":"onnx-community/Second-ONNX:q4"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last struct{ Status string }
	n := 0
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); n++ {
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
	}
	if resp.StatusCode != http.StatusOK || last.Status != "success" || n < 2 {
		t.Fatalf("%s: %d lines, last %+v", resp.Status, n, last)
	}
	if got := chat(t, p.url, "onnx-community/Second-ONNX"); got != hubAnswer {
		t.Fatalf("answer of the model pulled through the endpoint %q", got)
	}
}

func modelIDs(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func chat(t *testing.T, url, model string) string {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"Hello!"}]}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("%s: %s", resp.Status, b)
	}
	return out.Choices[0].Message.Content
}
