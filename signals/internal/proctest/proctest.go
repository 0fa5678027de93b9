// Package proctest runs the signals stores' multi-process tests: the test
// binary re-executes itself (os.Args[0] -test.run=^TestHelperProcess$) to act
// as a second, real process sharing the store's database, as a sending
// agent or as a receiving agent that is killed with SIGKILL after a drain
// and before its response is written.
package proctest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// Environment variables that tell a re-executed test binary its role.
const (
	EnvRole   = "SIGNALS_HELPER_ROLE"
	EnvTarget = "SIGNALS_HELPER_TARGET"
	envCount  = "SIGNALS_HELPER_COUNT"
	envMode   = "SIGNALS_HELPER_MODE"
	envLease  = "SIGNALS_HELPER_LEASE"
)

// Roles.
const (
	RoleSender        = "sender"
	RoleCrashReceiver = "crash-receiver"
)

// Opener opens the store named by target in a helper process.
type Opener func(ctx context.Context, target string) (signals.Store, error)

// IsHelper reports whether this process was started as a helper.
func IsHelper() bool { return os.Getenv(EnvRole) != "" }

// HelperMain runs the helper role named by the environment and exits the
// process. Call it from TestHelperProcess.
func HelperMain(open Opener) {
	ctx := context.Background()
	store, err := open(ctx, os.Getenv(EnvTarget))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		os.Exit(2)
	}
	switch os.Getenv(EnvRole) {
	case RoleSender:
		err = sender(ctx, store)
	case RoleCrashReceiver:
		err = crashReceiver(ctx, store)
	default:
		err = fmt.Errorf("unknown role %q", os.Getenv(EnvRole))
	}
	_ = store.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func mode() signals.Mode {
	if os.Getenv(envMode) == signals.MarkOnDrain.String() {
		return signals.MarkOnDrain
	}
	return signals.LeaseAndAck
}

// sender starts a session as "sender" and sends count signals to
// "receiver" through the send verb, printing each id.
func sender(ctx context.Context, store signals.Store) error {
	n, _ := strconv.Atoi(os.Getenv(envCount))
	r, err := signals.NewRouter(signals.RouterConfig{Store: store, Mode: mode()})
	if err != nil {
		return err
	}
	start, err := r.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: "sender"})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for i := range n {
		args, _ := json.Marshal(signals.Message{To: "receiver", Type: "n", Payload: json.RawMessage(strconv.Itoa(i))})
		resp, err := r.Call(ctx, signals.Request{Verb: signals.VerbSend, Identity: "sender", Session: start.Session, Args: args})
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "sent", resp.Result.(signals.Signal).ID)
	}
	fmt.Fprintln(out, "done")
	return out.Flush()
}

// crashReceiver starts a session as "victim" and calls a verb until a
// response carries signals; after that drain, before the response is
// written anywhere, it reports the ids on stdout and blocks until killed.
func crashReceiver(ctx context.Context, store signals.Store) error {
	lease, _ := time.ParseDuration(os.Getenv(envLease))
	r, err := signals.NewRouter(signals.RouterConfig{Store: store, Mode: mode(), Lease: lease,
		OnResponse: func(ctx context.Context, c *signals.Call, resp *signals.Response) {
			if len(resp.PendingSignals) == 0 {
				return
			}
			var ids []string
			for _, s := range resp.PendingSignals {
				ids = append(ids, s.ID)
			}
			fmt.Println("drained", strings.Join(ids, ","))
			_, _ = io.Copy(io.Discard, os.Stdin) // blocks: the parent kills us here
			os.Exit(3)                           // stdin closed without a kill: fail loudly
		}})
	if err != nil {
		return err
	}
	if err := r.Handle("status", func(context.Context, *signals.Call) (any, error) { return "ok", nil }); err != nil {
		return err
	}
	start, err := r.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: "victim"})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := r.Call(ctx, signals.Request{Verb: "status", Identity: "victim", Session: start.Session}); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("no signal arrived")
}

// Proc is a running helper process.
type Proc struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser
	done  chan error
}

// Start re-executes the test binary as role on target.
func Start(t *testing.T, role, target string, env ...string) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), EnvRole+"="+role, EnvTarget+"="+target)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{cmd: cmd, lines: make(chan string, 1024), stdin: stdin, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		for range p.lines {
		}
		<-p.done
	})
	return p
}

// Line returns the helper's next stdout line, failing t after timeout.
func (p *Proc) Line(t *testing.T, timeout time.Duration) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		return l, ok
	case <-time.After(timeout):
		t.Fatalf("helper printed nothing for %v", timeout)
	}
	return "", false
}

// Kill9 sends SIGKILL and waits until the process is gone.
func (p *Proc) Kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range p.lines {
	}
	err := <-p.done
	p.done <- err // for Cleanup
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper did not die of SIGKILL: %v", err)
	}
}

// Wait waits for a clean exit.
func (p *Proc) Wait(t *testing.T) {
	t.Helper()
	for range p.lines {
	}
	err := <-p.done
	p.done <- err
	if err != nil {
		t.Fatalf("helper failed: %v", err)
	}
}
