// Command connect prints, and with -write merges into the client's own
// file, the configuration that starts Prism's ACP agent and MCP server from
// an editor: Zed (agent_servers and context_servers), Claude Code
// (.mcp.json), Claude Desktop and VS Code (.vscode/mcp.json).
//
//	go run ./examples/connect [-client zed|claude-code|claude-desktop|vscode|all]
//	    [-acp CMD] [-mcp CMD] [-env KEY=VALUE ...] [-write [-config PATH]]
//
// A merge keeps every other entry, writes a backup beside the file first
// and refuses, changing nothing, a file that is not valid JSON (docs/cli.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prism-local/prism/internal/app/connect"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr, environment{})
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
}

// environment is what the command reads of the machine; tests replace it.
type environment struct {
	home, configDir, cwd string
	now                  time.Time
	lookPath             func(string) (string, error)
}

func (e environment) fill() (environment, error) {
	var err error
	if e.home == "" {
		if e.home, err = os.UserHomeDir(); err != nil {
			return e, err
		}
	}
	if e.configDir == "" {
		e.configDir = os.Getenv("XDG_CONFIG_HOME")
	}
	if e.cwd == "" {
		if e.cwd, err = os.Getwd(); err != nil {
			return e, err
		}
	}
	if e.now.IsZero() {
		e.now = time.Now()
	}
	if e.lookPath == nil {
		e.lookPath = exec.LookPath
	}
	return e, nil
}

type envFlag map[string]string

func (e envFlag) String() string { return "" }

func (e envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	e[k] = val
	return nil
}

func run(args []string, stdout, stderr io.Writer, env environment) error {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := fs.String("client", "all", "zed, claude-code, claude-desktop, vscode or all")
	acpCmd := fs.String("acp", "prism-acp", "the ACP agent's command (examples/acp built); a name on PATH is written as its absolute path")
	mcpCmd := fs.String("mcp", "prism-mcp", "the MCP server's command (examples/mcp built); a name on PATH is written as its absolute path")
	write := fs.Bool("write", false, "merge into the client's file instead of printing")
	path := fs.String("config", "", "the file -write merges into; default: the client's own (docs/cli.md)")
	vars := envFlag{}
	fs.Var(vars, "env", "KEY=VALUE set in the programs' environment; repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	env, err := env.fill()
	if err != nil {
		return err
	}
	clients := []string{*client}
	if *client == "all" {
		clients = connect.Clients
	} else if !slices.Contains(connect.Clients, *client) {
		return fmt.Errorf("-client %q: want zed, claude-code, claude-desktop, vscode or all", *client)
	}
	s := connect.Servers{ACP: command(*acpCmd, vars, env), MCP: command(*mcpCmd, vars, env)}
	if !*write {
		if *path != "" {
			return errors.New("-config names the file -write merges into; add -write")
		}
		for _, c := range clients {
			snippet, err := connect.Snippet(c, s)
			if err != nil {
				return err
			}
			p, _ := connect.DefaultPath(c, env.home, env.configDir, env.cwd, runtime.GOOS)
			fmt.Fprintf(stdout, "// %s: merge into %s\n%s\n", c, p, snippet)
		}
		return nil
	}
	if len(clients) != 1 {
		return errors.New("-write changes one client's file: name it with -client")
	}
	target := *path
	if target == "" {
		if target, err = connect.DefaultPath(clients[0], env.home, env.configDir, env.cwd, runtime.GOOS); err != nil {
			return err
		}
	}
	res, err := connect.Write(target, clients[0], s, env.now)
	if err != nil {
		return err
	}
	switch {
	case res.Created:
		fmt.Fprintf(stdout, "created %s\n", res.Path)
	default:
		fmt.Fprintf(stdout, "updated %s (the previous file is %s)\n", res.Path, res.Backup)
	}
	return nil
}

// command resolves a bare name on PATH to its absolute path, as editors
// do not always start programs with the user's shell PATH.
func command(name string, vars envFlag, env environment) connect.Command {
	path := name
	if !strings.ContainsRune(name, filepath.Separator) {
		if p, err := env.lookPath(name); err == nil {
			path = p
		}
	} else if abs, err := filepath.Abs(name); err == nil {
		path = abs
	}
	return connect.Command{Path: path, Env: vars}
}
