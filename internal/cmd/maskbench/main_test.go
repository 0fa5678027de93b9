package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
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
	want := []string{"validation errors: 0\n", "invalidation errors: 0\n", "compile errors: 1\n"}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, out.String())
		}
	}
}
