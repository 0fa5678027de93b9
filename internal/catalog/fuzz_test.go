package catalog_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/catalog"
)

// FuzzResolve holds Resolve to its contract for any name: a selection
// whose id matches the name, or a *catalog.Error with one of its codes.
func FuzzResolve(f *testing.F) {
	dir := f.TempDir()
	for _, id := range []string{"Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "tiny", "a:b"} {
		d := filepath.Join(dir, filepath.FromSlash(id))
		for _, name := range []string{"config.json", "model.onnx"} {
			writeFile(f, filepath.Join(d, name))
		}
	}
	cat, err := catalog.Scan(f.Context(), catalog.Sources{ModelsDirs: []string{dir}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"tiny", "qwen", "0.5b:q4", "a:b", ":", "", "TINY:", "x/y:z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		sel, err := cat.Resolve(name)
		if err != nil {
			var ce *catalog.Error
			if !errors.As(err, &ce) || ce.Error() == "" {
				t.Fatalf("Resolve(%q): %v", name, err)
			}
			switch ce.Code() {
			case catalog.CodeAmbiguousModel, catalog.CodeModelNotFound, catalog.CodeInvalidRequest:
			default:
				t.Fatalf("Resolve(%q): code %q", name, ce.Code())
			}
			return
		}
		if sel.ID == name && sel.Variant == "" {
			return
		}
		base, variant := catalog.SplitVariant(name)
		if sel.Variant != variant || !strings.Contains(strings.ToLower(sel.ID), strings.ToLower(base)) {
			t.Fatalf("Resolve(%q) = %+v", name, sel)
		}
	})
}
