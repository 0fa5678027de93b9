package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/jsonorder"
)

// TestCorpus runs the project's own MaskBench-format files with the
// Llama 3.1 tokenizer: every file compiles (except those that test a
// refused keyword), no valid instance is rejected and no invalid one
// accepted.
func TestCorpus(t *testing.T) {
	dir := fixtures.TokenizerDir(t, "llama3_1")
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out strings.Builder
	if err := run(append([]string{"-tokenizer", dir, "-out", t.TempDir()}, files...), &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"validation errors: 0\n", "invalidation errors: 0\n", "compile errors: 1\n",
		"compile errors by keyword: not 1\n", "schemas with a length bound above 4,096: 1 (passing 1, compile errors 0)\n"}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, out.String())
		}
	}
}

// An instance is serialised from what Python's json.loads makes of it: one
// member per name (the last value, at the first place) and -0 as 0.
func TestPythonLoads(t *testing.T) {
	v, err := jsonorder.Parse([]byte(`{"a":1,"b":{"c":1,"c":[-0,-0.0,1E2]},"a":3}`))
	if err != nil {
		t.Fatal(err)
	}
	// python3 -c 'import json; print(json.dumps(json.loads(...), ensure_ascii=False))'
	want := `{"a": 3, "b": {"c": [0, -0.0, 100.0]}}`
	if got := pythonLoads(v).Python(); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
