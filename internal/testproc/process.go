package testproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// ErrRunning is wrapped by the errors of Wait and ExitCode when the
// process has not exited in the time they were given.
var ErrRunning = errors.New("still running")

// pipeGrace bounds how long Wait waits, once the process has exited, for
// its standard error to close: a child process it left behind may hold it.
const pipeGrace = 10 * time.Second

// Process is a started command.
type Process struct {
	cmd    *exec.Cmd
	stderr *lines
	stdin  io.WriteCloser
	stdout *os.File
	exited chan struct{}
	err    error // cmd.Wait's result, once exited is closed
}

// Option changes how Start starts a command.
type Option func(*settings)

type settings struct {
	stdio bool
}

// Stdio gives the test the process's standard input and output
// (Process.Stdin, Process.Stdout), for a program that speaks a protocol
// on them. Without it the process reads from and writes to the null
// device.
func Stdio() Option { return func(s *settings) { s.stdio = true } }

// Start starts cmd, made by the caller with exec.Command and given its
// Env (and Dir), and returns at once. Its standard error is collected for
// Stderr and WaitLine, so cmd.Stderr must be left nil, as must cmd.Stdin
// and cmd.Stdout with Stdio. A command that cannot start fails t.
//
// When t ends, a process still running is killed and reaped and its pipes
// are closed. A test that checks how the process ends stops it in a
// cleanup it registers after Start, which runs first.
func Start(t testing.TB, cmd *exec.Cmd, opts ...Option) *Process {
	t.Helper()
	var s settings
	for _, o := range opts {
		o(&s)
	}
	p, err := start(cmd, s)
	if err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(p.reap)
	return p
}

func start(cmd *exec.Cmd, s settings) (*Process, error) {
	if cmd.Stderr != nil || (s.stdio && (cmd.Stdin != nil || cmd.Stdout != nil)) {
		return nil, errors.New("the command's standard streams are set; Start connects them itself")
	}
	p := &Process{cmd: cmd, stderr: newLines(), exited: make(chan struct{})}
	// Not an *os.File: exec copies it through a pipe, and Wait returns
	// only once the copy is done, so all of it is there after the exit.
	cmd.Stderr = p.stderr
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = pipeGrace
	}
	var child *os.File // the write end of stdout, the child's
	if s.stdio {
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		// An os.Pipe rather than cmd.StdoutPipe: Wait closes the latter
		// when the process exits, which could drop output the test has
		// not read yet; this one gives the reader everything, then EOF.
		r, w, err := os.Pipe()
		if err != nil {
			_ = in.Close()
			return nil, err
		}
		p.stdin, p.stdout, child = in, r, w
		cmd.Stdout = w
	}
	if err := cmd.Start(); err != nil {
		if child != nil {
			_ = child.Close()
			_ = p.stdout.Close()
			_ = p.stdin.Close()
		}
		return nil, err
	}
	if child != nil {
		_ = child.Close() // the child has its own copy; EOF comes when it exits
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// reap kills a process still running, waits for it and closes the pipes.
func (p *Process) reap() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	if p.stdout != nil {
		_ = p.stdout.Close()
	}
}

// Stdin is the process's standard input (with Stdio; nil otherwise).
// Closing it is the end of the process's input.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout is the process's standard output (with Stdio; nil otherwise). It
// reads everything the process wrote, then EOF once the process (and any
// child it gave the stream to) has ended. Closing it is a reader that went
// away: the process's next write fails.
func (p *Process) Stdout() io.ReadCloser {
	if p.stdout == nil {
		return nil
	}
	return p.stdout
}

// Stderr is the process's standard error so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Signal sends sig to the process; one that has exited is not an error.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Kill ends the process at once.
func (p *Process) Kill() { _ = p.Signal(os.Kill) }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Stop sends sig to a process still running and waits up to within for it
// to exit; one still running then is killed and reported. The result is
// nil only for exit status 0, else the exit error (*exec.ExitError for a
// status or a signal). A process that had already exited reports how it
// did.
func (p *Process) Stop(sig os.Signal, within time.Duration) error {
	if p.Exited() {
		return p.err
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(within):
		p.Kill()
		<-p.exited
		return fmt.Errorf("still running %v after signal %v; killed", within, sig)
	}
}

// Wait waits up to within for the process to exit by itself and returns
// how it did: nil for exit status 0, else the exit error. A process still
// running after within is left running (Stop, Kill or the end of the test
// ends it) and the error wraps ErrRunning.
func (p *Process) Wait(within time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	case <-time.After(within):
		return fmt.Errorf("%w after %v", ErrRunning, within)
	}
}

// ExitCode waits up to within for the process to exit by itself and
// returns its exit status: -1 for a process a signal ended. The error is
// Wait's when the process still runs, or why it has no status.
func (p *Process) ExitCode(within time.Duration) (int, error) {
	err := p.Wait(within)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	default:
		return -1, err
	}
}

// Environ is this process's environment without the variables whose
// names start with one of the prefixes: the base of a child's environment
// that must see none of the machine's own settings (PRISM_*, HF_*).
func Environ(without ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, prefix := range without {
			if strings.HasPrefix(kv, prefix) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}
