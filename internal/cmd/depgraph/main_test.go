package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The block round-trips: written into a file, -check accepts it, and a
// changed line makes -check fail naming the fix.
func TestWriteThenCheck(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "arch.md")
	if err := os.WriteFile(doc, []byte("# A\n\n"+begin+"\nstale\n"+end+"\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-check", doc}, nil); err == nil || !strings.Contains(err.Error(), "-write") {
		t.Fatalf("a stale block passed: %v", err)
	}
	if err := run([]string{"-write", doc}, nil); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-check", doc}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(doc)
	if !strings.HasPrefix(string(got), "# A\n\n"+begin) || !strings.HasSuffix(string(got), end+"\n\nafter\n") ||
		!strings.Contains(string(got), "\nprism ─▶ ") {
		t.Fatalf("written:\n%s", got)
	}
}

// Only the mains and the applications themselves may import an
// application package.
func TestFloors(t *testing.T) {
	ok := map[string][]string{"examples/serve": {"internal/app/server"}, "internal/app/server": {"internal/app/wire", "prism"}, "prism": {"engine"}}
	if err := floors(ok); err != nil {
		t.Fatal(err)
	}
	bad := map[string][]string{"prism": {"engine", "internal/app/wire"}, "internal/catalog": {"internal/app/server"}}
	err := floors(bad)
	if err == nil || !strings.Contains(err.Error(), "internal/catalog ─▶ internal/app/server; prism ─▶ internal/app/wire") {
		t.Fatalf("floors(bad) = %v", err)
	}
}
