package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testEnv(t *testing.T) environment {
	dir := t.TempDir()
	return environment{home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "project"), now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		lookPath: func(name string) (string, error) {
			if name == "prism-acp" {
				return "/usr/local/bin/prism-acp", nil
			}
			return "", errors.New("not found")
		}}
}

func TestPrintsEveryClient(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(nil, &out, &errOut, testEnv(t)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"// zed: merge into ", "// claude-code: ", "// claude-desktop: ", "// vscode: ",
		`"command": "/usr/local/bin/prism-acp"`, `"command": "prism-mcp"`, `"agent_servers"`, `"context_servers"`, `"mcpServers"`, `"servers"`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
}

func TestWriteOneClient(t *testing.T) {
	env := testEnv(t)
	path := filepath.Join(t.TempDir(), "claude.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"fs":{"command":"npx"}},"numStartups":3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run([]string{"-client", "claude-code", "-write", "-config", path, "-mcp", "./bin/mcp", "-env", "PRISM_API_KEY=k"}, &out, &out, env)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "updated "+path+" (the previous file is "+path+".prism-backup-") {
		t.Errorf("output %q", out.String())
	}
	b, _ := os.ReadFile(path)
	var m struct {
		MCPServers map[string]struct {
			Command string
			Env     map[string]string
		} `json:"mcpServers"`
		NumStartups int `json:"numStartups"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("./bin/mcp")
	if m.NumStartups != 3 || m.MCPServers["fs"].Command != "npx" || m.MCPServers["prism"].Command != abs || m.MCPServers["prism"].Env["PRISM_API_KEY"] != "k" {
		t.Errorf("%s", b)
	}
	// The default file of a project-scoped client is in the project.
	if err := run([]string{"-client", "vscode", "-write"}, &out, &out, env); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(env.cwd, ".vscode", "mcp.json")); err != nil {
		t.Error(err)
	}
}

func TestBadUse(t *testing.T) {
	for _, args := range [][]string{{"-write"}, {"-client", "emacs"}, {"-config", "x.json"}, {"extra"}, {"-env", "NOEQUALS"}} {
		var out bytes.Buffer
		if err := run(args, &out, &out, testEnv(t)); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
