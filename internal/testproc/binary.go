package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Binary is a main package built once per test binary, on first use, into
// a folder of its own (so a test may allow that folder, and nothing else
// around it, to the process). Declare it as a package-level variable of
// the test package and remove it from TestMain:
//
//	var agent = testproc.Binary{Package: "."}
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		agent.Remove()
//		os.Exit(code)
//	}
//
// It is built as `go build` builds it by default, without the race
// detector even under `go test -race`: a race-built binary loads models
// several times slower, and the packages it is made of run their own
// tests under -race.
type Binary struct {
	// Package is what go build is given: "." for the package under test,
	// or an import path such as github.com/prism-local/prism/examples/serve.
	Package string

	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the binary the first time it is called and returns its
// path. A build that fails fails t, at this call and at every later one.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() { b.dir, b.path, b.err = build(b.Package) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the folder the binary was built in, if it was built.
// Call it from TestMain once m.Run has returned.
func (b *Binary) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// build runs go build for pkg into a fresh folder; the binary takes the
// name go build gives it (the package's last path element).
func build(pkg string) (dir, path string, err error) {
	dir, err = os.MkdirTemp("", "prism-bin-")
	if err != nil {
		return "", "", err
	}
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), pkg).CombinedOutput()
	if err != nil {
		return dir, "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dir, "", err
	}
	if len(entries) != 1 {
		return dir, "", fmt.Errorf("go build %s wrote %d files, want one binary", pkg, len(entries))
	}
	return dir, filepath.Join(dir, entries[0].Name()), nil
}
