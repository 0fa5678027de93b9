package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/npmfetch"
)

// Parity with the reference renderer is checked against vectors kept in
// testdata/reference/vectors.json: each holds a template, an input and the
// text (or error) @huggingface/jinja — the renderer behind transformers.js
// apply_chat_template — produced for it. The tests need neither node nor
// npm. To regenerate the vectors after changing the cases:
//
//	go test ./templates -run TestReferenceVectors -update-vectors
//
// which fetches the reference with npm into Prism's cache and runs
// testdata/reference/render.mjs under node.
var updateVectors = flag.Bool("update-vectors", false, "regenerate testdata/reference/vectors.json with the reference renderer (needs node and npm)")

// referencePackage is the reference renderer's npm package.
var referencePackage = npmfetch.Package{Name: "@huggingface/jinja", Version: "0.5.11"}

const vectorsPath = "testdata/reference/vectors.json"

// vector is one case with the reference's answer.
type vector struct {
	Name     string `json:"name"`
	Template string `json:"template"`
	// Family is the tokenizer fixture the template came from, or "" for a
	// template written for a dialect feature.
	Family string `json:"family,omitempty"`
	Input  Input  `json:"input"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// referenceDir returns the unpacked reference package, fetching it with
// npm into the cache when needed.
func referenceDir(t testing.TB) string {
	t.Helper()
	root, err := fixtures.CacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := npmfetch.Fetch(ctx, root, referencePackage)
	if err != nil {
		fixtures.Unavailable(t, "reference renderer: %v", err)
	}
	return dir
}

// runReference renders cases with the reference under node.
func runReference(t testing.TB, mode string, cases []vector, extra ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		fixtures.Unavailable(t, "node is not installed")
	}
	dir := referenceDir(t)
	type nodeCase struct {
		Name     string         `json:"name"`
		Template string         `json:"template"`
		Context  map[string]any `json:"context"`
	}
	in := struct {
		Cases []nodeCase `json:"cases"`
	}{}
	for _, c := range cases {
		in.Cases = append(in.Cases, nodeCase{c.Name, c.Template, applyContext(t, c.Input)})
	}
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("testdata/reference/render.mjs")
	// render.mjs expects DIR/node_modules/@huggingface/jinja; the npm
	// fetch unpacks to DIR/package, so point a shim directory at it.
	shim := t.TempDir()
	mod := filepath.Join(shim, "node_modules", "@huggingface")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "package"), filepath.Join(mod, "jinja")); err != nil {
		t.Fatal(err)
	}
	args := append([]string{script, shim, mode}, extra...)
	cmd := exec.Command("node", args...)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node render.mjs: %v\n%s", err, stderr.String())
	}
	return out
}

// applyContext is the variables apply_chat_template hands the template:
// messages, tools (null when absent), add_generation_prompt, the special
// tokens and the extra variables.
func applyContext(t testing.TB, in Input) map[string]any {
	t.Helper()
	ctx := map[string]any{}
	for k, v := range in.Extra {
		ctx[k] = v
	}
	ctx["messages"] = in.Messages
	if in.Tools != nil {
		ctx["tools"] = in.Tools
	} else {
		ctx["tools"] = nil
	}
	ctx["add_generation_prompt"] = in.AddGenerationPrompt
	ctx["bos_token"] = in.BOSToken
	ctx["eos_token"] = in.EOSToken
	return ctx
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("read vectors (regenerate with -update-vectors): %v", err)
	}
	var vs []vector
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatal(err)
	}
	for i := range vs {
		vs[i].Input.Extra = rawExtra(vs[i].Input.Extra)
	}
	return vs
}

// rawExtra turns decoded extra values back into raw JSON, so they reach
// the template with their key order.
func rawExtra(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		b, _ := json.Marshal(v)
		out[k] = json.RawMessage(b)
	}
	return out
}

// TestReferenceVectors regenerates the vectors with -update-vectors and
// otherwise checks that they cover the current cases.
func TestReferenceVectors(t *testing.T) {
	cases := referenceCases(t)
	if *updateVectors {
		out := runReference(t, "render", cases)
		var results []struct {
			Name   string  `json:"name"`
			Output *string `json:"output"`
			Error  *string `json:"error"`
		}
		if err := json.Unmarshal(out, &results); err != nil {
			t.Fatalf("reference output: %v\n%s", err, out)
		}
		for i := range cases {
			if results[i].Output != nil {
				cases[i].Output = *results[i].Output
			}
			if results[i].Error != nil {
				cases[i].Error = *results[i].Error
			}
		}
		data, err := json.MarshalIndent(cases, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	vs := loadVectors(t)
	have := map[string]bool{}
	for _, v := range vs {
		have[v.Name] = true
	}
	for _, c := range cases {
		if !have[c.Name] {
			t.Errorf("case %s has no vector; regenerate with -update-vectors", c.Name)
		}
	}
}
