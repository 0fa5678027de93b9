package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/catalog"
)

// write creates the files (relative paths) under dir.
func write(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		writeFile(t, filepath.Join(dir, f))
	}
}

func writeFile(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "{}"
	if filepath.Base(path) == "genai_config.json" {
		body = `{"model": {"decoder": {"filename": "model.onnx"}}}`
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hubRepo lays out a hub cache repository as huggingface_hub does: files
// in blobs/, snapshots/REV/ holding relative symlinks to them, refs/main
// naming a revision ("" for no refs/main).
func hubRepo(t *testing.T, hub, folder, main string, snapshots map[string][]string) {
	t.Helper()
	repo := filepath.Join(hub, folder)
	for rev, files := range snapshots {
		for _, f := range files {
			blob := filepath.Join(repo, "blobs", rev+"-"+strings.ReplaceAll(f, "/", "_"))
			write(t, filepath.Dir(blob), filepath.Base(blob))
			link := filepath.Join(repo, "snapshots", rev, f)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(filepath.Dir(link), blob)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(rel, link); err != nil {
				t.Fatal(err)
			}
		}
	}
	if main != "" {
		write(t, repo, "refs/main")
		if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(main+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type tree struct {
	models, home, hub string
	cat               *catalog.Catalog
}

func newTree(t *testing.T) tree {
	t.Helper()
	root := t.TempDir()
	tr := tree{models: filepath.Join(root, "models"), home: filepath.Join(root, "home-models"), hub: filepath.Join(root, "hub")}
	write(t, tr.models,
		"optimum/config.json", "optimum/onnx/model.onnx", "optimum/onnx/model_q4.onnx",
		"genai/genai_config.json", "genai/model.onnx",
		"Qwen/Qwen2.5-0.5B-Instruct/config.json", "Qwen/Qwen2.5-0.5B-Instruct/onnx/model.onnx",
		"Qwen/Qwen2.5-1.5B-Instruct/config.json", "Qwen/Qwen2.5-1.5B-Instruct/onnx/model.onnx",
		"weights-only/config.json", "weights-only/model.safetensors",
		"graph-only/model.onnx",
		"odd:name/config.json", "odd:name/model.onnx",
		".hidden/config.json", ".hidden/model.onnx",
		"a/b/c/config.json", "a/b/c/model.onnx", // too deep
	)
	write(t, tr.home, "genai/genai_config.json", "genai/model.onnx", "tiny/config.json", "tiny/model.onnx")
	hubRepo(t, tr.hub, "models--onnx-community--SmolLM2-135M-Instruct", "rev2", map[string][]string{
		"rev1": {"config.json"},
		"rev2": {"config.json", "tokenizer.json", "onnx/model.onnx", "onnx/model_fp16.onnx"},
	})
	hubRepo(t, tr.hub, "models--gpt2", "", map[string][]string{"only": {"config.json", "model.onnx"}})
	hubRepo(t, tr.hub, "models--org--two-snapshots", "", map[string][]string{"x": {"config.json", "model.onnx"}, "y": {"config.json", "model.onnx"}})
	hubRepo(t, tr.hub, "models--org--pytorch", "main1", map[string][]string{"main1": {"config.json", "model.safetensors"}})
	hubRepo(t, tr.hub, "models--org--bad-ref", "gone", map[string][]string{"x": {"config.json", "model.onnx"}})
	hubRepo(t, tr.hub, "datasets--org--data", "d", map[string][]string{"d": {"config.json", "model.onnx"}})
	// An interrupted download: the snapshot links to a blob that is not there.
	hubRepo(t, tr.hub, "models--org--partial", "p", map[string][]string{"p": {"config.json"}})
	if err := os.Symlink("../../blobs/missing", filepath.Join(tr.hub, "models--org--partial", "snapshots", "p", "model.onnx")); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{tr.models, tr.home, filepath.Join(root, "absent")}, HubCache: tr.hub})
	if err != nil {
		t.Fatal(err)
	}
	tr.cat = cat
	return tr
}

func TestScan(t *testing.T) {
	tr := newTree(t)
	var got []string
	for _, m := range tr.cat.Models() {
		got = append(got, m.ID+"@"+m.Source)
	}
	want := "Qwen/Qwen2.5-0.5B-Instruct@dir,Qwen/Qwen2.5-1.5B-Instruct@dir,genai@dir,gpt2@hub,odd:name@dir,onnx-community/SmolLM2-135M-Instruct@hub,optimum@dir,tiny@dir"
	if strings.Join(got, ",") != want {
		t.Errorf("models\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	byID := map[string]catalog.Model{}
	for _, m := range tr.cat.Models() {
		byID[m.ID] = m
	}
	smol := byID["onnx-community/SmolLM2-135M-Instruct"]
	if smol.Revision != "rev2" || smol.Dir != filepath.Join(tr.hub, "models--onnx-community--SmolLM2-135M-Instruct", "snapshots", "rev2") {
		t.Errorf("hub model follows refs/main: %+v", smol)
	}
	if g := byID["genai"]; g.Dir != filepath.Join(tr.models, "genai") {
		t.Errorf("the first models directory wins: %+v", g)
	}
	skipped := map[string]string{}
	for _, s := range tr.cat.Skipped() {
		skipped[s.ID] = s.Reason
	}
	for id, reason := range map[string]string{
		"genai":             "shadowed by " + filepath.Join(tr.models, "genai"),
		"org/two-snapshots": "2 snapshots and no refs/main",
		"org/pytorch":       "onnx/model.onnx not found",
		"org/bad-ref":       `refs/main names snapshot "gone"`,
		"org/partial":       "onnx/model.onnx not found",
	} {
		if !strings.Contains(skipped[id], reason) {
			t.Errorf("skipped %s: %q, want it to say %q", id, skipped[id], reason)
		}
	}
	if !strings.Contains(skipped["weights-only"], "not found") {
		t.Errorf("a folder with a config and no graph is not reported: %q", skipped["weights-only"])
	}
	if roots := tr.cat.Roots(); len(roots) != 4 {
		t.Errorf("roots %q", roots)
	}
}

func TestScanRootIsAModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-model")
	write(t, dir, "config.json", "onnx/model.onnx")
	cat, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if ms := cat.Models(); len(ms) != 1 || ms[0].ID != "my-model" || ms[0].Dir != dir {
		t.Errorf("models %+v", ms)
	}
}

func TestScanCancelled(t *testing.T) {
	tr := newTree(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := catalog.Scan(ctx, catalog.Sources{ModelsDirs: []string{tr.models}}); err == nil {
		t.Error("a cancelled scan succeeded")
	}
}

func TestResolve(t *testing.T) {
	tr := newTree(t)
	for _, c := range []struct {
		name, id, variant string
	}{
		{"optimum", "optimum", ""},
		{"optimum:q4", "optimum", "q4"},
		{"Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", ""},
		{"qwen/qwen2.5-0.5b-instruct:fp16", "Qwen/Qwen2.5-0.5B-Instruct", "fp16"},
		{"SmolLM2-135M-Instruct", "onnx-community/SmolLM2-135M-Instruct", ""},
		{"smol", "onnx-community/SmolLM2-135M-Instruct", ""},
		{"0.5B", "Qwen/Qwen2.5-0.5B-Instruct", ""},
		{"gpt2:int8", "gpt2", "int8"},
		{"odd:name", "odd:name", ""},
		{"odd:name:q4", "odd:name", "q4"},
	} {
		sel, err := tr.cat.Resolve(c.name)
		if err != nil || sel.ID != c.id || sel.Variant != c.variant {
			t.Errorf("Resolve(%q) = %+v, %v; want %s variant %q", c.name, sel, err, c.id, c.variant)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	tr := newTree(t)
	for _, c := range []struct {
		name, code string
		says       []string
	}{
		{"qwen", catalog.CodeAmbiguousModel, []string{"Qwen/Qwen2.5-0.5B-Instruct, Qwen/Qwen2.5-1.5B-Instruct"}},
		{"instruct:q4", catalog.CodeAmbiguousModel, []string{"matches 3 models"}},
		{"llama", catalog.CodeModelNotFound, []string{"the models are: Qwen/Qwen2.5-0.5B-Instruct", "tiny"}},
		{"org/pytorch", catalog.CodeModelNotFound, []string{"org/pytorch is in", "not an ONNX model Prism can load"}},
		{"", catalog.CodeModelNotFound, nil},
		{"tiny:", catalog.CodeInvalidRequest, []string{"empty variant"}},
	} {
		_, err := tr.cat.Resolve(c.name)
		var ce *catalog.Error
		if !errors.As(err, &ce) || ce.Code() != c.code {
			t.Errorf("Resolve(%q) = %v, want code %s", c.name, err, c.code)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Resolve(%q): %q does not say %q", c.name, err, s)
			}
		}
	}
	if _, err := tr.cat.Resolve(strings.Repeat("x", 5000)); err == nil || len(err.Error()) > 1000 {
		t.Errorf("a long name is repeated whole: %d bytes", len(err.Error()))
	}
	empty, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{filepath.Join(t.TempDir(), "none")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.Resolve("x"); err == nil || !strings.Contains(err.Error(), "no models were found in") {
		t.Errorf("empty catalog: %v", err)
	}
}

func TestSplitVariant(t *testing.T) {
	for name, want := range map[string][2]string{
		"m":          {"m", ""},
		"m:q4":       {"m", "q4"},
		"org/m:fp16": {"org/m", "fp16"},
		"a:b/c":      {"a:b/c", ""},
		"m:":         {"m", ""},
	} {
		if b, v := catalog.SplitVariant(name); b != want[0] || v != want[1] {
			t.Errorf("SplitVariant(%q) = %q, %q", name, b, v)
		}
	}
}
