package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

// TestAgentSyscallsUnderStrace proves I9 on the built agent: driven through
// every method and tool path under strace -f, it opens only its own
// binary's, model, cache, runtime-library and system files, never a path in
// the session's workspace, and starts no process (threads only).
func TestAgentSyscallsUnderStrace(t *testing.T) {
	t.Parallel()
	strace, err := exec.LookPath("strace")
	if err != nil {
		fixtures.Unavailable(t, "strace (Debian package strace): %v", err)
	}
	out := filepath.Join(t.TempDir(), "trace")
	env := agentEnv(t)
	c := startAgent(t, env, strace, "-f", "-qq", "-e", "trace=%file,%process", "-o", out)

	// Plain prompt, thoughts and answer.
	s := c.handshake("think", true, true)
	stopReason(t, c.call("session/prompt", prompt(s, "Hi")))
	// A read, a write allowed, a write rejected, a write cancelled.
	c.serve = func(method string, params json.RawMessage) (any, *rpcError) {
		if method == "fs/read_text_file" {
			return map[string]any{"content": fileText}, nil
		}
		return nil, &rpcError{Code: -32601, Message: method}
	}
	s = c.handshake("reader", true, true)
	stopReason(t, c.call("session/prompt", prompt(s, "read")))
	for _, tc := range []struct{ model, option string }{{"writer", "allow_once"}, {"rejected", "reject_once"}, {"writer", ""}} {
		s = c.handshake(tc.model, true, true)
		n := 0
		c.serve = writeServer(c, s, tc.option, &n)
		stopReason(t, c.call("session/prompt", prompt(s, "write")))
	}
	// A client error on a read, tools not offered, the error path.
	c.serve = func(string, json.RawMessage) (any, *rpcError) {
		return nil, &rpcError{Code: -32002, Message: "no such file"}
	}
	s = c.handshake("reader", true, false)
	stopReason(t, c.call("session/prompt", prompt(s, "read")))
	s = c.handshake("", false, false)
	c.call("session/set_config_option", map[string]any{"sessionId": s, "configId": "model", "value": "missing"})
	// Robustness input.
	for _, l := range []string{"junk", `[1]`, strings.Repeat("[", 5000)} {
		c.line(l)
	}
	c.rawCall(999, `{"jsonrpc":"2.0","id":999,"method":"session/load","params":{}}`)
	c.call("fs/read_text_file", map[string]any{"path": workspace + "/x"})
	c.call("initialize", []any{})
	// The client leaves with a permission request pending.
	asked := make(chan struct{})
	c.serve = func(string, json.RawMessage) (any, *rpcError) { close(asked); select {} }
	s = c.handshake("writer", true, true)
	c.start("session/prompt", prompt(s, "write"))
	<-asked
	_ = c.stdin.Close()
	<-c.done
	if err := c.exit(); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, c.p.Stderr())
	}

	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, string(b), env)

	// The remote path: generation by a running reference server.
	out = filepath.Join(t.TempDir(), "trace")
	env = agentEnv(t, "PRISM_BASE_URL="+referenceServer(t))
	c = startAgent(t, env, strace, "-f", "-qq", "-e", "trace=%file,%process", "-o", out)
	c.serve = func(method string, params json.RawMessage) (any, *rpcError) {
		return map[string]any{"content": fileText}, nil
	}
	for _, model := range []string{"think", "reader"} {
		s = c.handshake(model, true, false)
		stopReason(t, c.call("session/prompt", prompt(s, "go")))
	}
	_ = c.stdin.Close()
	<-c.done
	if err := c.exit(); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, c.p.Stderr())
	}
	if b, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	checkTrace(t, string(b), env)
}

var (
	traceCall = regexp.MustCompile(`^\d+ +(?:<\.\.\. )?([a-z0-9_]+)\(`)
	tracePath = regexp.MustCompile(`^\d+ +[a-z0-9_]+\((AT_FDCWD|\d+), "([^"]*)"|^\d+ +(?:open|creat)\(()"([^"]*)"`)
	traceFD   = regexp.MustCompile(`= (\d+)$`)
)

func checkTrace(t *testing.T, trace string, env []string) {
	t.Helper()
	// TMPDIR and the cache directory are the agent's and the runtime's own
	// (the runtime's telemetry, which would write there, is off: docs/onnx.md),
	// never the user's.
	allowed := []string{"/proc/", "/sys/", "/dev/null", "/dev/urandom", "/etc/", "/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/share/zoneinfo/", "/usr/share/mime/", "/usr/local/share/mime/",
		filepath.Dir(agent.Path(t)) + "/", models.Path(t) + "/", filepath.Dir(fixtures.ORTLib(t)) + "/"}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" && (k == "PRISM_HOME" || k == "PRISM_CACHE_DIR" || k == "XDG_CACHE_HOME" || k == "TMPDIR") {
			allowed = append(allowed, v+"/")
		}
	}
	execs, lines := 0, 0
	fds := map[string]string{} // open descriptors, for dirfd-relative opens
	for _, line := range strings.Split(trace, "\n") {
		m := traceCall.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		lines++
		call := m[1]
		if strings.Contains(line, workspace) {
			t.Errorf("the agent touched the workspace: %s", line)
		}
		switch call {
		case "execve", "execveat":
			if execs++; execs > 1 || !strings.Contains(line, agent.Path(t)) {
				t.Errorf("the agent started a process: %s", line)
			}
		case "fork", "vfork":
			t.Errorf("the agent forked: %s", line)
		case "clone", "clone3":
			if !strings.Contains(line, "CLONE_THREAD") && !strings.Contains(line, "resumed>") {
				t.Errorf("the agent cloned a process, not a thread: %s", line)
			}
		case "open", "openat", "openat2", "creat":
			p := tracePath.FindStringSubmatch(line)
			if p == nil {
				continue
			}
			path := p[2] + p[4]
			if dir := p[1]; dir != "" && dir != "AT_FDCWD" && !strings.HasPrefix(path, "/") {
				if fds[dir] == "" {
					t.Errorf("open relative to an unknown descriptor: %s", line)
					continue
				}
				path = fds[dir] + "/" + path
			}
			if !strings.HasPrefix(path, "/") || strings.Contains(path, "/../") {
				t.Errorf("relative open (the working directory is not the agent's): %s", line)
				continue
			}
			if fd := traceFD.FindStringSubmatch(line); fd != nil {
				fds[fd[1]] = path
			}
			ok := false
			for _, a := range allowed {
				if strings.HasPrefix(path, a) || path+"/" == a {
					ok = true
					break
				}
			}
			if !ok {
				t.Errorf("open outside the agent's own files: %s", line)
			}
		}
	}
	if lines == 0 || execs != 1 {
		t.Fatalf("the trace has %d calls and %d execs: is strace working?\n%.2000s", lines, execs, trace)
	}
}
