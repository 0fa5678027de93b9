package lock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/prism-local/prism/lock"
)

func TestMain(m *testing.M) {
	if os.Getenv("PRISM_LOCK_HELPER") != "" {
		os.Exit(helperMain())
	}
	goleak.VerifyTestMain(m)
}

// helperMain is the child process the cross-process tests start: it takes
// the lock (or marks a model resident), says "ready" on stdout and then
// holds on until its stdin closes or it is killed.
func helperMain() int {
	dir, model := os.Getenv("PRISM_LOCK_HELPER_DIR"), os.Getenv("PRISM_LOCK_HELPER_MODEL")
	lk, err := lock.New(lock.WithDir(dir), lock.WithTimeout(time.Minute))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch os.Getenv("PRISM_LOCK_HELPER") {
	case "hold":
		h, err := lk.Acquire(context.Background(), model)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer h.Release()
	case "resident":
		r, err := lk.MarkResident(model)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer r.Close()
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// startHelper starts a child process of this test binary in mode ("hold" or
// "resident") and waits until it reports ready. The child is killed at
// cleanup if still running.
func startHelper(t *testing.T, dir, mode, model string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"PRISM_LOCK_HELPER="+mode, "PRISM_LOCK_HELPER_DIR="+dir, "PRISM_LOCK_HELPER_MODEL="+model)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper did not get ready: %q, %v", line, err)
	}
	return cmd
}

// killHelper sends SIGKILL, so nothing of the child's own clean-up runs.
func killHelper(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

func newLock(t *testing.T, opts ...lock.Option) *lock.Lock {
	t.Helper()
	lk, err := lock.New(append([]lock.Option{lock.WithDir(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

func TestAcquireRecordsHolderAndReleaseClearsIt(t *testing.T) {
	lk := newLock(t)
	held, err := lk.Acquire(context.Background(), "qwen")
	if err != nil {
		t.Fatal(err)
	}
	h, isHeld, err := lk.Holder()
	if err != nil || !isHeld || h == nil {
		t.Fatalf("Holder() = %v, %v, %v; want this process", h, isHeld, err)
	}
	if h.PID != os.Getpid() || h.Model != "qwen" || h.Since.IsZero() {
		t.Fatalf("holder = %+v", h)
	}
	if got := held.Holder(); got.PID != h.PID || got.Model != h.Model {
		t.Fatalf("Held.Holder() = %+v, metadata says %+v", got, h)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if err := held.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if data, err := os.ReadFile(lk.Path()); err != nil || strings.TrimSpace(string(data)) != "" {
		t.Fatalf("holder record left after release: %q, %v", data, err)
	}
	if h, isHeld, err := lk.Holder(); err != nil || isHeld || h != nil {
		t.Fatalf("after release Holder() = %v, %v, %v", h, isHeld, err)
	}
}

func TestHolderOfUnusedLock(t *testing.T) {
	lk := newLock(t)
	if h, held, err := lk.Holder(); err != nil || held || h != nil {
		t.Fatalf("Holder() = %v, %v, %v", h, held, err)
	}
}

func TestTimeoutInProcessNamesHolder(t *testing.T) {
	lk := newLock(t, lock.WithTimeout(30*time.Millisecond))
	held, err := lk.Acquire(context.Background(), "first")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	_, err = lk.Acquire(context.Background(), "second")
	var te *lock.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TimeoutError", err)
	}
	if !errors.Is(err, lock.ErrTimeout) || te.Code() != "load_lock_timeout" {
		t.Fatalf("Is(ErrTimeout) = %v, code %q", errors.Is(err, lock.ErrTimeout), te.Code())
	}
	if te.Holder == nil || te.Holder.PID != os.Getpid() || te.Holder.Model != "first" || te.Model != "second" {
		t.Fatalf("timeout error = %+v (holder %+v)", te, te.Holder)
	}
	for _, want := range []string{fmt.Sprint(os.Getpid()), "first", "PRISM_LOAD_TIMEOUT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestWaiterGetsLockOnRelease(t *testing.T) {
	lk := newLock(t)
	held, err := lk.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx := &waitSignal{Context: context.Background(), waiting: make(chan struct{})}
	got := make(chan error, 1)
	go func() {
		h, err := lk.Acquire(ctx, "b")
		if err == nil {
			err = h.Release()
		}
		got <- err
	}()
	<-ctx.waiting // the waiter is blocked on the lock before it is released
	held.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestCancelStopsWait(t *testing.T) {
	for _, name := range []string{"in-process", "cross-process"} {
		t.Run(name, func(t *testing.T) {
			lk := newLock(t)
			if name == "in-process" {
				held, err := lk.Acquire(context.Background(), "a")
				if err != nil {
					t.Fatal(err)
				}
				defer held.Release()
			} else {
				startHelper(t, lk.Dir(), "hold", "a")
			}
			parent, cancel := context.WithCancel(context.Background())
			ctx := &waitSignal{Context: parent, waiting: make(chan struct{})}
			got := make(chan error, 1)
			go func() {
				_, err := lk.Acquire(ctx, "b")
				got <- err
			}()
			<-ctx.waiting // Acquire is blocked on the lock, not just starting
			cancel()
			if err := <-got; !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
	}
}

// waitSignal is a context that reports when someone first selects on its
// Done channel: Acquire does that only once it has to wait for the lock.
type waitSignal struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *waitSignal) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

func TestTwoProcessesContendAndSIGKILLFreesTheLock(t *testing.T) {
	dir := t.TempDir()
	child := startHelper(t, dir, "hold", "llama-3.1-8b")
	lk, err := lock.New(lock.WithDir(dir), lock.WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}

	h, held, err := lk.Holder()
	if err != nil || !held || h == nil || h.PID != child.Process.Pid || h.Model != "llama-3.1-8b" {
		t.Fatalf("Holder() = %+v, %v, %v; want pid %d", h, held, err, child.Process.Pid)
	}

	_, err = lk.Acquire(context.Background(), "qwen")
	var te *lock.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TimeoutError", err)
	}
	if te.Holder == nil || te.Holder.PID != child.Process.Pid || te.Holder.Model != "llama-3.1-8b" {
		t.Fatalf("holder = %+v, want pid %d model llama-3.1-8b", te.Holder, child.Process.Pid)
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("pid %d", child.Process.Pid)) || !strings.Contains(msg, "llama-3.1-8b") {
		t.Fatalf("message does not name pid and model: %s", msg)
	}

	killHelper(t, child)

	// The child's metadata is still on disk (SIGKILL ran no clean-up) but
	// must not be reported as a live holder.
	if data, err := os.ReadFile(filepath.Join(dir, lock.FileName)); err != nil || !strings.Contains(string(data), "llama-3.1-8b") {
		t.Fatalf("expected the dead holder's record to remain on disk: %q, %v", data, err)
	}
	if h, held, err := lk.Holder(); err != nil || held || h != nil {
		t.Fatalf("after SIGKILL Holder() = %+v, %v, %v; want free", h, held, err)
	}
	got, err := lk.Acquire(context.Background(), "qwen")
	if err != nil {
		t.Fatalf("acquire after SIGKILL: %v", err)
	}
	if h, _, _ := lk.Holder(); h == nil || h.PID != os.Getpid() || h.Model != "qwen" {
		t.Fatalf("holder after takeover = %+v", h)
	}
	got.Release()
}

func TestWaiterWinsWhenHolderIsKilledMidWait(t *testing.T) {
	dir := t.TempDir()
	child := startHelper(t, dir, "hold", "big")
	lk, err := lock.New(lock.WithDir(dir), lock.WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		h, err := lk.Acquire(context.Background(), "small")
		if err == nil {
			err = h.Release()
		}
		got <- err
	}()
	killHelper(t, child)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestStaleMetadataIsNotAHolder(t *testing.T) {
	lk := newLock(t)
	// A record naming a live process (this one) but no flock behind it.
	rec := fmt.Sprintf(`{"pid":%d,"model":"ghost","since":"2026-01-01T00:00:00Z"}`, os.Getpid())
	if err := os.WriteFile(lk.Path(), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	if h, held, err := lk.Holder(); err != nil || held || h != nil {
		t.Fatalf("Holder() = %+v, %v, %v; want free", h, held, err)
	}
}

func TestResidentsAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	lk, err := lock.New(lock.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	child := startHelper(t, dir, "resident", "gemma-3")
	own, err := lk.MarkResident("qwen")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()

	rs, err := lk.Residents()
	if err != nil || len(rs) != 2 {
		t.Fatalf("Residents() = %+v, %v; want 2", rs, err)
	}
	other := lk.OtherHolder()
	if other == nil || other.PID != child.Process.Pid || other.Model != "gemma-3" {
		t.Fatalf("OtherHolder() = %+v, want pid %d gemma-3", other, child.Process.Pid)
	}

	killHelper(t, child)
	rs, err = lk.Residents()
	if err != nil || len(rs) != 1 || rs[0].PID != os.Getpid() {
		t.Fatalf("after SIGKILL Residents() = %+v, %v; want only this process", rs, err)
	}
	if other := lk.OtherHolder(); other != nil {
		t.Fatalf("OtherHolder() = %+v after the other process died", other)
	}
	marks, _ := filepath.Glob(filepath.Join(dir, "resident-*"))
	if len(marks) != 1 {
		t.Fatalf("stale mark not removed: %v", marks)
	}
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
	if rs, _ := lk.Residents(); len(rs) != 0 {
		t.Fatalf("Residents() after Close = %+v", rs)
	}
}

func TestOtherHolderNamesLockHolderWithoutResidents(t *testing.T) {
	dir := t.TempDir()
	child := startHelper(t, dir, "hold", "phi")
	lk, err := lock.New(lock.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if h := lk.OtherHolder(); h == nil || h.PID != child.Process.Pid || h.Model != "phi" {
		t.Fatalf("OtherHolder() = %+v", h)
	}
}

// TestOptions: New takes its settings from options only; PRISM_HOME and
// PRISM_LOAD_TIMEOUT reach it through internal/config (tested there and in
// package prism), never from the process environment.
func TestOptions(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PRISM_HOME", t.TempDir()) // must be ignored
	t.Setenv("PRISM_LOAD_TIMEOUT", "9")
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct {
		name    string
		opts    []lock.Option
		want    time.Duration
		wantDir string
	}{
		{name: "defaults", want: lock.DefaultTimeout, wantDir: filepath.Join(home, ".prism")},
		{name: "seconds", opts: []lock.Option{lock.WithDir(dir), lock.WithTimeout(2500 * time.Millisecond)}, want: 2500 * time.Millisecond, wantDir: dir},
		{name: "zero waits for ctx", opts: []lock.Option{lock.WithDir(dir), lock.WithTimeout(0)}, want: 0, wantDir: dir},
		{name: "negative waits for ctx", opts: []lock.Option{lock.WithDir(dir), lock.WithTimeout(-time.Second)}, want: 0, wantDir: dir},
		{name: "empty dir is the default", opts: []lock.Option{lock.WithDir("")}, want: lock.DefaultTimeout, wantDir: filepath.Join(home, ".prism")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lk, err := lock.New(tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if lk.Timeout() != tt.want || lk.Dir() != tt.wantDir {
				t.Fatalf("timeout %v dir %s; want %v %s", lk.Timeout(), lk.Dir(), tt.want, tt.wantDir)
			}
		})
	}
}

func TestZeroTimeoutWaitsForContext(t *testing.T) {
	lk := newLock(t, lock.WithTimeout(0))
	held, err := lk.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := lk.Acquire(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context deadline", err)
	}
}

func TestLongModelNameIsShortenedToFit(t *testing.T) {
	lk := newLock(t)
	long := strings.Repeat("é", 3000)
	held, err := lk.Acquire(context.Background(), long)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	h, isHeld, err := lk.Holder()
	if err != nil || !isHeld || h == nil || h.PID != os.Getpid() || !strings.HasPrefix(long, h.Model) || h.Model == "" {
		t.Fatalf("Holder() = %+v, %v, %v", h, isHeld, err)
	}
}

func TestLockFileReplacedWhileUnheld(t *testing.T) {
	lk := newLock(t)
	held, err := lk.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	held.Release()
	if err := os.Remove(lk.Path()); err != nil {
		t.Fatal(err)
	}
	held, err = lk.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if _, err := os.Stat(lk.Path()); err != nil {
		t.Fatalf("lock file not recreated: %v", err)
	}
}

func TestNewTouchesNothingUntilUsed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	lk, err := lock.New(lock.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, held, err := lk.Holder(); err != nil || held {
		t.Fatalf("Holder() = %v, %v", held, err)
	}
	if rs, err := lk.Residents(); err != nil || len(rs) != 0 {
		t.Fatalf("Residents() = %v, %v", rs, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only use created %s: %v", dir, err)
	}
	r, err := lk.MarkResident("m")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	os.RemoveAll(dir)
	h, err := lk.Acquire(context.Background(), "m")
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("lock dir: %v %v", st, err)
	}
}
