//go:build cgo

package main

// The built serve binary, started as a user starts it, on scripted models
// that run on the real ONNX Runtime. The binary is built once per package
// run; the models are written once.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

const (
	thinkAnswer = "<think>\nThe user greets me.\n</think>\n\nHello there, friend."
	jsonAnswer  = `{"city": "Paris", "temperature": 21}`
	toolAnswer  = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>"
)

// countAnswer is a long answer with no repeating cycle (the loop guard
// leaves it alone), so a generation is still running when a test acts.
func countAnswer(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d, ", i)
	}
	return b.String() + "done."
}

// countTo is how far the "count" model counts.
const countTo = 150

var (
	tmpOnce sync.Once
	tmpRoot string
	tmpErr  error

	buildOnce sync.Once
	binPath   string
	buildErr  error

	modelsOnce sync.Once
	modelsRoot string
	modelsErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpRoot != "" {
		_ = os.RemoveAll(tmpRoot)
	}
	os.Exit(code)
}

func root(t testing.TB) string {
	t.Helper()
	tmpOnce.Do(func() { tmpRoot, tmpErr = os.MkdirTemp("", "prism-serve-test-") })
	if tmpErr != nil {
		t.Fatal(tmpErr)
	}
	return tmpRoot
}

// binary builds examples/serve once.
func binary(t testing.TB) string {
	t.Helper()
	dir := root(t)
	buildOnce.Do(func() {
		binPath = filepath.Join(dir, "serve")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// scriptedModels writes the models "think", "tool", "json" and "count"
// (the real Qwen3 tokenizer and chat template) once.
func scriptedModels(t testing.TB) string {
	t.Helper()
	dir := root(t)
	tokDir := fixtures.TokenizerDir(t, "qwen3")
	modelsOnce.Do(func() {
		modelsRoot = filepath.Join(dir, "models")
		tok, err := tokenizer.Load(tokDir)
		if err != nil {
			modelsErr = err
			return
		}
		eos, _ := tok.TokenToID("<|im_end|>")
		for name, answer := range map[string]string{"think": thinkAnswer, "tool": toolAnswer, "json": jsonAnswer, "count": countAnswer(countTo)} {
			cfg := onnxgen.Tiny()
			cfg.TokenizerDir = tokDir
			cfg.Vocab = 0
			cfg.Script = tok.Encode(answer)
			cfg.ScriptEOS = int(eos)
			cfg.Context = 256 + len(cfg.Script)
			if err := onnxgen.Write(context.Background(), filepath.Join(modelsRoot, name), cfg); err != nil {
				modelsErr = err
				return
			}
		}
	})
	if modelsErr != nil {
		t.Fatal(modelsErr)
	}
	return modelsRoot
}

// process is a running serve binary.
type process struct {
	cmd    *exec.Cmd
	url    string // http://HOST:PORT, without /v1
	stderr *lockedBuffer
	exited chan struct{}
	err    error // the Wait result, once exited is closed
}

// lockedBuffer collects the process's stderr while tests read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var servingLine = regexp.MustCompile(`msg=serving url=(http://\S+)/v1`)

// serveEnv is the environment of a started binary: this one without its
// PRISM_* settings, a private PRISM_HOME (its lock folder and models) and
// an empty Hugging Face cache, so nothing of the machine leaks in.
func serveEnv(t testing.TB) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PRISM_") && !strings.HasPrefix(kv, "HF_") {
			env = append(env, kv)
		}
	}
	home, err := os.MkdirTemp(root(t), "home-")
	if err != nil {
		t.Fatal(err)
	}
	return append(env, "PRISM_ORT_LIB="+fixtures.ORTLib(t), "PRISM_HOME="+home, "HF_HUB_CACHE="+filepath.Join(home, "hub"))
}

// startServe runs the binary with args on a free loopback port and waits
// until it serves. The process is stopped (SIGTERM) when t ends, if it
// still runs.
func startServe(t testing.TB, args ...string) *process {
	t.Helper()
	p, err := launch(binary(t), serveEnv(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("stopping serve: %v\n%s", err, p.stderr)
		}
	})
	return p
}

// launch starts bin and returns once its "serving" line names the URL.
func launch(bin string, env []string, args ...string) (*process, error) {
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-device", "cpu"}, args...)...)
	cmd.Env = env
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.stderr.Write([]byte(line + "\n"))
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(p.stderr, pipe)
	}()
	go func() {
		<-copied // Wait closes the pipe: read it to the end first
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.url = <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("serve exited before serving: %v\n%s", p.err, p.stderr)
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-p.exited
		return nil, fmt.Errorf("serve did not start serving in 2 minutes:\n%s", p.stderr)
	}
}

// stop sends sig and waits for the exit; a process that outlives wait is
// killed and reported.
func (p *process) stop(sig os.Signal, wait time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(wait):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("still running %s after %v; killed", wait, sig)
	}
}

// exitCode waits for the process and returns its exit status.
func (p *process) exitCode(wait time.Duration) (int, error) {
	select {
	case <-p.exited:
	case <-time.After(wait):
		return -1, errors.New("did not exit in " + strconv.Itoa(int(wait.Seconds())) + " s")
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, p.err
}
