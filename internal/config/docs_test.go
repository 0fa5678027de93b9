package config_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/config"
)

// root is the repository, two levels up from this package.
const root = "../.."

// TestDocsTableMatchesVariables keeps docs/getting-started.md's
// Environment table equal to the variables Load reads: the same names in
// the same order, the same accepted values and defaults, and a meaning for
// each.
func TestDocsTableMatchesVariables(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(data)
	if i := strings.Index(section, "\n## Environment\n"); i >= 0 {
		section = section[i:]
	}
	if i := strings.Index(section[1:], "\n## "); i >= 0 {
		section = section[:i+1]
	}
	type row struct{ name, form, def, meaning string }
	var rows []row
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `PRISM_") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Errorf("want 4 cells (variable, accepted values, default, meaning): %s", line)
			continue
		}
		unquote := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "`", "") }
		rows = append(rows, row{unquote(cells[0]), strings.TrimSpace(cells[1]), unquote(cells[2]), strings.TrimSpace(cells[3])})
	}
	vars := config.Variables()
	for i := 0; i < max(len(rows), len(vars)); i++ {
		switch {
		case i >= len(rows):
			t.Errorf("%s is not in the docs table", vars[i].Name)
		case i >= len(vars):
			t.Errorf("the docs table lists %s, which the config does not read", rows[i].name)
		default:
			v, r := vars[i], rows[i]
			if r.name != v.Name || r.form != v.Form || r.def != strings.ReplaceAll(v.Default, "`", "") || r.meaning == "" {
				t.Errorf("docs row %d: %+v\nconfig:      {name:%s form:%s def:%s} and a meaning", i+1, r, v.Name, v.Form, v.Default)
			}
		}
	}
}

// TestSourceNamesAreVariables: every PRISM_* name the non-test code
// mentions (in advice, errors or docs comments) is a variable Load knows,
// so no message points at a setting that does not exist.
func TestSourceNamesAreVariables(t *testing.T) {
	known := map[string]bool{}
	for _, v := range config.Variables() {
		known[v.Name] = true
	}
	name := regexp.MustCompile(`PRISM_[A-Z0-9_]*[A-Z0-9]`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(src), -1) {
			if !known[n] {
				t.Errorf("%s mentions %s, which is not a variable of internal/config", path, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
