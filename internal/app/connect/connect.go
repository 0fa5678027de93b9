package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The clients.
const (
	Zed           = "zed"
	ClaudeCode    = "claude-code"
	ClaudeDesktop = "claude-desktop"
	VSCode        = "vscode"
)

// Clients lists the clients in the order the command prints them.
var Clients = []string{Zed, ClaudeCode, ClaudeDesktop, VSCode}

// Command is how a client starts one program.
type Command struct {
	Path string
	Args []string
	Env  map[string]string
}

// Servers are the programs to configure; a zero Command leaves one out.
type Servers struct {
	ACP, MCP Command
}

// The entry names Prism's programs get.
const (
	NameACP = "Prism"
	NameMCP = "prism"
)

// entry is one program entry of a section.
type entry struct {
	section, name string
	value         any
}

// entries returns what client's file gets for s.
func entries(client string, s Servers) ([]entry, error) {
	var out []entry
	stdio := func(c Command, extra map[string]any) map[string]any {
		m := map[string]any{"command": c.Path, "args": nonNil(c.Args), "env": nonNilMap(c.Env)}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	switch client {
	case Zed:
		if s.ACP.Path != "" {
			out = append(out, entry{"agent_servers", NameACP, stdio(s.ACP, map[string]any{"type": "custom"})})
		}
		if s.MCP.Path != "" {
			out = append(out, entry{"context_servers", NameMCP, stdio(s.MCP, map[string]any{"source": "custom"})})
		}
	case ClaudeCode, ClaudeDesktop:
		if s.MCP.Path != "" {
			extra := map[string]any{}
			if client == ClaudeCode {
				extra["type"] = "stdio"
			}
			out = append(out, entry{"mcpServers", NameMCP, stdio(s.MCP, extra)})
		}
	case VSCode:
		if s.MCP.Path != "" {
			out = append(out, entry{"servers", NameMCP, stdio(s.MCP, map[string]any{"type": "stdio"})})
		}
	default:
		return nil, fmt.Errorf("unknown client %q: want one of %s", client, strings.Join(Clients, ", "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: nothing to configure (it starts only the MCP server)", client)
	}
	return out, nil
}

func nonNil(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Snippet is the configuration for client as a JSON document of its own.
func Snippet(client string, s Servers) ([]byte, error) {
	return Merge(nil, client, s)
}

// InvalidError is an existing file that is not a JSON object: it is left
// as it is.
type InvalidError struct {
	Path string
	Err  error
}

// Error names the file and the cause.
func (e *InvalidError) Error() string {
	where := "the existing configuration"
	if e.Path != "" {
		where = e.Path
	}
	return fmt.Sprintf("%s is not a JSON object Prism can merge into (%v); it was not changed — fix it, or add the entries by hand", where, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// Code returns the stable machine code.
func (e *InvalidError) Code() string { return "invalid_config_file" }

// member is one name/value pair, the value as it was written.
type member struct {
	name  string
	value json.RawMessage
}

// members reads a JSON object's members in order; empty input is {}.
func members(doc []byte) ([]member, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil {
		return nil, err
	} else if t != json.Delim('{') {
		return nil, errors.New("the top level is not an object")
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		if slices.ContainsFunc(out, func(m member) bool { return m.name == name }) {
			// Readers disagree on which one counts: do not guess.
			return nil, fmt.Errorf("member %q appears twice", name)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{name, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the top-level object")
	}
	return out, nil
}

func encode(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m.name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// set puts value under name, in place when the name exists, else last.
func set(ms []member, name string, value json.RawMessage) []member {
	if i := slices.IndexFunc(ms, func(m member) bool { return m.name == name }); i >= 0 {
		ms[i].value = value
		return ms
	}
	return append(ms, member{name, value})
}

// Merge adds client's entries for s to the document existing (nil or
// empty for none), keeping every other member and their order. The result
// is indented with two spaces.
func Merge(existing []byte, client string, s Servers) ([]byte, error) {
	es, err := entries(client, s)
	if err != nil {
		return nil, err
	}
	top, err := members(existing)
	if err != nil {
		return nil, &InvalidError{Err: err}
	}
	for _, e := range es {
		var section []member
		if i := slices.IndexFunc(top, func(m member) bool { return m.name == e.section }); i >= 0 {
			if section, err = members(top[i].value); err != nil {
				return nil, &InvalidError{Err: fmt.Errorf("%s: %w", e.section, err)}
			}
		}
		v, err := json.Marshal(e.value)
		if err != nil {
			return nil, err
		}
		top = set(top, e.section, encode(set(section, e.name, v)))
	}
	var out bytes.Buffer
	if err := json.Indent(&out, encode(top), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Result says what Write did.
type Result struct {
	Path string
	// Backup is the copy of the previous file; "" when there was none.
	Backup  string
	Created bool
}

// Write merges client's entries into the file at path (created with its
// folders when missing). An existing file is copied to a backup beside it
// first, and the new text replaces it atomically. A file that is not a JSON
// object is an *InvalidError and is not touched.
func Write(path, client string, s Servers, now time.Time) (Result, error) {
	res := Result{Path: path}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		res.Created = true
	case err != nil:
		return res, err
	}
	merged, err := Merge(old, client, s)
	var inv *InvalidError
	if errors.As(err, &inv) {
		inv.Path = path
		return res, inv
	}
	if err != nil {
		return res, err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return res, err
	}
	if !res.Created {
		res.Backup = path + ".prism-backup-" + now.UTC().Format("20060102T150405Z")
		if err := os.WriteFile(res.Backup, old, mode); err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".prism-*")
	if err != nil {
		return res, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(merged); err != nil {
		tmp.Close()
		return res, err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return res, err
	}
	if err := tmp.Close(); err != nil {
		return res, err
	}
	return res, os.Rename(tmp.Name(), path)
}

// DefaultPath is where client keeps the file this package writes: home is
// the user's home, configDir $XDG_CONFIG_HOME (or "" for ~/.config), cwd the
// project folder for project-scoped files, goos runtime.GOOS.
func DefaultPath(client, home, configDir, cwd, goos string) (string, error) {
	if configDir == "" {
		configDir = filepath.Join(home, ".config")
	}
	switch client {
	case Zed:
		return filepath.Join(configDir, "zed", "settings.json"), nil
	case ClaudeCode:
		return filepath.Join(cwd, ".mcp.json"), nil
	case ClaudeDesktop:
		if goos == "darwin" {
			return filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json"), nil
		}
		return filepath.Join(configDir, "Claude", "claude_desktop_config.json"), nil
	case VSCode:
		return filepath.Join(cwd, ".vscode", "mcp.json"), nil
	}
	return "", fmt.Errorf("unknown client %q: want one of %s", client, strings.Join(Clients, ", "))
}
