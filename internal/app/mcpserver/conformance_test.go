package mcpserver_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/internal/app/mcpserver"
	"github.com/prism-local/prism/internal/app/mcpserver/fixture"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/signals/memory"
)

// node20Shim lets the conformance suite's CLI run on Node.js 20: it
// imports fs.globSync (Node 22), used only by its tier-check command, so
// the hook gives the suite's modules an fs with a globSync that says so.
const node20Shim = `import { register } from 'node:module';
const shim = 'data:text/javascript,' + encodeURIComponent("import fs from 'node:fs'; export * from 'node:fs'; export default fs; export function globSync() { throw new Error('fs.globSync needs Node.js 22'); }");
const hooks = 'export async function resolve(spec, ctx, next) {' +
  ' if ((spec === "fs" || spec === "node:fs") && ctx.parentURL && ctx.parentURL.includes("/@modelcontextprotocol/conformance/")) return { url: ' + JSON.stringify(shim) + ', shortCircuit: true };' +
  ' return next(spec, ctx); }';
register('data:text/javascript,' + encodeURIComponent(hooks));
`

// fixtureServer serves Prism's MCP handler with the conformance fixtures
// on a loopback listener and returns its /mcp URL.
func fixtureServer(t *testing.T) string {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	quiet := slog.New(slog.DiscardHandler)
	b := backend.New(backend.Config{Local: true, Logger: quiet})
	t.Cleanup(func() { b.Close() })
	srv, err := mcpserver.New(mcpserver.Config{Backend: b, Store: store, Logger: quiet, ServerOptions: fixture.Options})
	if err != nil {
		t.Fatal(err)
	}
	fixture.Register(srv.MCP())
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL + "/mcp"
}

// TestConformanceServerScenarios runs the MCP conformance suite's server
// scenarios (2025-06-18 and 2025-11-25; the suite has none for 2026-07-28)
// against the streamable HTTP transport; the expected failures, with their
// reasons, are in testdata/conformance-baseline.yml.
func TestConformanceServerScenarios(t *testing.T) {
	dir := fixtures.NodeDir(t)
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	shim := filepath.Join(t.TempDir(), "node20-shim.mjs")
	if err := os.WriteFile(shim, []byte(node20Shim), 0o644); err != nil {
		t.Fatal(err)
	}
	baseline, err := filepath.Abs("testdata/conformance-baseline.yml")
	if err != nil {
		t.Fatal(err)
	}
	url := fixtureServer(t)
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "node", "--import", shim, cli, "server", "--url", url,
		"--spec-version", "2025-11-25", "--suite", "all", "--expected-failures", baseline, "-o", out)
	cmd.Dir = out
	got, err := cmd.CombinedOutput()
	t.Logf("%s", lastLines(string(got), 12))
	if err != nil {
		t.Errorf("conformance: %v", err)
	}
	// Every scenario ran: one results folder each.
	entries, _ := os.ReadDir(out)
	var ran int
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(out, e.Name(), "checks.json")); err == nil {
			ran++
			checkNoFailure(t, filepath.Join(out, e.Name(), "checks.json"), e.Name())
		}
	}
	if ran < 25 {
		t.Errorf("only %d scenarios left results", ran)
	}
}

// checkNoFailure reports the failed checks of one scenario, unless the
// scenario is an expected failure.
func checkNoFailure(t *testing.T, path, scenario string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var checks []struct {
		ID, Status, ErrorMessage string
	}
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, c := range checks {
		if c.Status == "WARNING" || c.Status == "FAILURE" {
			t.Logf("%s: %s %s: %s", scenario, c.Status, c.ID, c.ErrorMessage)
		}
		if c.Status == "FAILURE" && !expectedFailure(scenario) {
			t.Errorf("%s: %s: %s", scenario, c.ID, c.ErrorMessage)
		}
	}
}

func expectedFailure(folder string) bool {
	data, _ := os.ReadFile("testdata/conformance-baseline.yml")
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && strings.HasPrefix(folder, "server-"+name+"-") {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
