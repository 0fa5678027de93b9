package connect

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	servers = Servers{ACP: Command{Path: "/opt/prism/acp"}, MCP: Command{Path: "/opt/prism/mcp", Env: map[string]string{"PRISM_BASE_URL": "http://127.0.0.1:8080/v1"}}}
	now     = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
)

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

func TestSnippetPerClient(t *testing.T) {
	for _, tc := range []struct {
		client, section, name, marker string
		absent                        string
	}{
		{Zed, "agent_servers", NameACP, `"type":"custom"`, ""},
		{Zed, "context_servers", NameMCP, `"source":"custom"`, ""},
		{ClaudeCode, "mcpServers", NameMCP, `"type":"stdio"`, "agent_servers"},
		{ClaudeDesktop, "mcpServers", NameMCP, `"command":"/opt/prism/mcp"`, "agent_servers"},
		{VSCode, "servers", NameMCP, `"type":"stdio"`, "mcpServers"},
	} {
		b, err := Snippet(tc.client, servers)
		if err != nil {
			t.Fatal(err)
		}
		m := decode(t, b)
		entry, ok := m[tc.section].(map[string]any)[tc.name].(map[string]any)
		if !ok {
			t.Fatalf("%s: no %s.%s in %s", tc.client, tc.section, tc.name, b)
		}
		compact, _ := json.Marshal(entry)
		if !strings.Contains(string(compact), tc.marker) {
			t.Errorf("%s: %s lacks %s", tc.client, compact, tc.marker)
		}
		if tc.absent != "" && m[tc.absent] != nil {
			t.Errorf("%s: unexpected %s", tc.client, tc.absent)
		}
	}
	if _, err := Snippet("emacs", servers); err == nil {
		t.Error("an unknown client was accepted")
	}
	if _, err := Snippet(VSCode, Servers{ACP: servers.ACP}); err == nil {
		t.Error("VS Code with only the ACP agent should have nothing to configure")
	}
}

func TestWriteMergesKeepingEverythingElse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	old := `{
  "theme": "One Dark",
  "context_servers": {"other": {"command": "x", "args": ["--y"]}, "prism": {"command": "/old"}},
  "buffer_font_size": 15,
  "nested": {"b": 1, "a": [1, 2, {"z": null}]}
}
`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Write(path, Zed, servers, now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || res.Backup != path+".prism-backup-20261201T120000Z" {
		t.Fatalf("result %+v", res)
	}
	if b, _ := os.ReadFile(res.Backup); string(b) != old {
		t.Errorf("backup %q", b)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	m := decode(t, b)
	if m["theme"] != "One Dark" || m["buffer_font_size"] != float64(15) {
		t.Errorf("other settings lost: %s", got)
	}
	cs := m["context_servers"].(map[string]any)
	if cs["other"] == nil || cs["prism"].(map[string]any)["command"] != "/opt/prism/mcp" {
		t.Errorf("context_servers %v", cs)
	}
	if m["agent_servers"].(map[string]any)[NameACP] == nil {
		t.Errorf("no agent server: %s", got)
	}
	// Order kept: the file's members as they were, the new section last;
	// inside a section, a replaced entry stays where it was.
	order := []string{`"theme"`, `"context_servers"`, `"other"`, `"prism"`, `"buffer_font_size"`, `"nested"`, `"b"`, `"a"`, `"agent_servers"`}
	at := 0
	for _, k := range order {
		i := strings.Index(got[at:], k)
		if i < 0 {
			t.Fatalf("%s out of order in\n%s", k, got)
		}
		at += i
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the file's 0600", fi.Mode().Perm())
	}
	// Writing again changes nothing but makes another backup.
	again, err := Write(path, Zed, servers, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(path); string(b2) != got {
		t.Errorf("a second merge changed the file:\n%s", b2)
	}
	if again.Backup == res.Backup {
		t.Error("the second backup overwrote the first")
	}
}

func TestWriteCreatesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".vscode", "mcp.json")
	res, err := Write(path, VSCode, servers, now)
	if err != nil || !res.Created || res.Backup != "" {
		t.Fatalf("%+v %v", res, err)
	}
	b, _ := os.ReadFile(path)
	if decode(t, b)["servers"].(map[string]any)[NameMCP] == nil {
		t.Errorf("%s", b)
	}
}

func TestInvalidFileIsReportedNotOverwritten(t *testing.T) {
	for name, text := range map[string]string{
		"comments (JSONC)": "{\n  // my settings\n  \"theme\": \"x\"\n}\n",
		"trailing comma":   `{"theme": "x",}`,
		"not an object":    `["x"]`,
		"section not obj":  `{"mcpServers": []}`,
		"garbage":          `hello`,
		"two values":       `{} {}`,
		"truncated":        `{"mcpServers": {`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.json")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Write(path, ClaudeDesktop, servers, now)
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Path != path || !strings.Contains(err.Error(), "was not changed") {
				t.Fatalf("err = %v", err)
			}
			if b, _ := os.ReadFile(path); string(b) != text {
				t.Errorf("the file changed: %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("files left beside it: %v", entries)
			}
		})
	}
}

func TestDefaultPaths(t *testing.T) {
	for _, tc := range []struct{ client, goos, config, want string }{
		{Zed, "linux", "", "/h/.config/zed/settings.json"},
		{Zed, "linux", "/x", "/x/zed/settings.json"},
		{ClaudeCode, "linux", "", "/p/.mcp.json"},
		{ClaudeDesktop, "darwin", "", "/h/Library/Application Support/Claude/claude_desktop_config.json"},
		{ClaudeDesktop, "linux", "", "/h/.config/Claude/claude_desktop_config.json"},
		{VSCode, "linux", "", "/p/.vscode/mcp.json"},
	} {
		if got, err := DefaultPath(tc.client, "/h", tc.config, "/p", tc.goos); err != nil || got != tc.want {
			t.Errorf("%s on %s: %q %v, want %q", tc.client, tc.goos, got, err, tc.want)
		}
	}
}

// FuzzMerge: any existing text either merges into a document that holds
// the entry and every top-level member it had, or is refused as invalid.
func FuzzMerge(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `{"mcpServers":{"x":{}}}`, `{"mcpServers":7}`, `[]`, `{"a":{"b":[1,{"c":"d"}]}}`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, old []byte) {
		out, err := Merge(old, ClaudeCode, servers)
		var inv *InvalidError
		if errors.As(err, &inv) {
			return
		}
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("merged text is not JSON: %v\n%s", err, out)
		}
		var before map[string]json.RawMessage
		if json.Unmarshal(old, &before) == nil {
			for k := range before {
				if _, ok := m[k]; !ok {
					t.Fatalf("member %q lost", k)
				}
			}
		}
		var s map[string]map[string]json.RawMessage
		if json.Unmarshal(out, &s) != nil && !json.Valid(m["mcpServers"]) {
			t.Fatalf("no mcpServers object in %s", out)
		}
	})
}
