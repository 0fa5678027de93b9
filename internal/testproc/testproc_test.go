package testproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// childEnv names what the test binary does when it runs as the child
// process of a test (see child).
const childEnv = "PRISM_TESTPROC_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(child(role))
	}
	goleak.VerifyTestMain(m)
}

// child is the test binary run as a process to start and stop:
//
//	serve  says "starting" and "ready at ADDR" on stderr (ADDR an HTTP
//	       server answering 200), exits 0 on SIGTERM after "bye"
//	die    says "oops" without a newline and exits 2
//	hang   ignores SIGTERM and runs until killed
//	echo   writes each line of its input upper-cased; exits 3 at its end
func child(role string) int {
	switch role {
	case "serve":
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() {
			_ = http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		}()
		fmt.Fprintln(os.Stderr, "starting")
		fmt.Fprintf(os.Stderr, "ready at http://%s\n", ln.Addr())
		<-stop
		fmt.Fprintln(os.Stderr, "bye")
		return 0
	case "die":
		fmt.Fprint(os.Stderr, "oops")
		return 2
	case "hang":
		signal.Ignore(syscall.SIGTERM)
		select {}
	case "echo":
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(strings.ToUpper(sc.Text()))
		}
		return 3
	}
	return 1
}

func startChild(t *testing.T, role string, opts ...Option) *Process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	return Start(t, cmd, opts...)
}

var readyLine = regexp.MustCompile(`^ready at (http://\S+)$`)

func TestReadyThenStopped(t *testing.T) {
	p := startChild(t, "serve")
	m, err := p.WaitLine(readyLine, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitHTTP(t.Context(), m[1]+"/health", http.Header{"Authorization": {"Bearer k"}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if p.Exited() {
		t.Fatal("exited while serving")
	}
	if err := p.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := p.Stderr(); !strings.HasPrefix(got, "starting\nready at ") || !strings.HasSuffix(got, "bye\n") {
		t.Errorf("stderr %q", got)
	}
	// A line written before WaitLine is called counts; so does a stopped
	// process's whole stderr.
	if m, err := p.WaitLine(regexp.MustCompile(`^bye$`), time.Second); err != nil || m[0] != "bye" {
		t.Errorf("bye: %v %v", m, err)
	}
	if code, err := p.ExitCode(time.Second); code != 0 || err != nil {
		t.Errorf("exit code %d, %v", code, err)
	}
}

func TestExitBeforeReady(t *testing.T) {
	p := startChild(t, "die")
	_, err := p.WaitLine(readyLine, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 2)") || !strings.HasSuffix(err.Error(), "oops") {
		t.Errorf("WaitLine: %v", err)
	}
	if err := p.WaitHTTP(t.Context(), "http://127.0.0.1:1/", nil, time.Minute); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("WaitHTTP: %v", err)
	}
	if code, err := p.ExitCode(time.Minute); code != 2 || err != nil {
		t.Errorf("exit code %d, %v", code, err)
	}
	// The unterminated last line is a line once the process has exited.
	if _, err := p.WaitLine(regexp.MustCompile(`^oops$`), time.Second); err != nil {
		t.Error(err)
	}
	var ee *exec.ExitError
	if err := p.Stop(syscall.SIGTERM, time.Minute); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("Stop after the exit: %v, want its exit status", err)
	}
}

func TestStopKillsWhatIgnoresTheSignal(t *testing.T) {
	p := startChild(t, "hang")
	if err := p.Wait(50 * time.Millisecond); !errors.Is(err, ErrRunning) {
		t.Fatalf("Wait: %v, want ErrRunning", err)
	}
	if _, err := p.WaitLine(readyLine, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no line matched") {
		t.Errorf("WaitLine: %v", err)
	}
	// The child may not have ignored SIGTERM yet when it arrives; either
	// way the process ends, and only status 0 would be a success.
	if err := p.Stop(syscall.SIGTERM, 200*time.Millisecond); err == nil {
		t.Fatal("Stop: nil for a process that did not exit 0")
	}
	if !p.Exited() {
		t.Error("still running after Stop")
	}
}

func TestStdio(t *testing.T) {
	p := startChild(t, "echo", Stdio())
	out := bufio.NewReader(p.Stdout())
	if _, err := io.WriteString(p.Stdin(), "hi\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); line != "HI\n" || err != nil {
		t.Fatalf("read %q, %v", line, err)
	}
	_, _ = io.WriteString(p.Stdin(), "last\n")
	_ = p.Stdin().Close()
	// Everything written before the exit is read, then EOF.
	rest, err := io.ReadAll(out)
	if string(rest) != "LAST\n" || err != nil {
		t.Errorf("rest %q, %v", rest, err)
	}
	if code, err := p.ExitCode(time.Minute); code != 3 || err != nil {
		t.Errorf("exit code %d, %v", code, err)
	}
}

// TestReapedWhenTheTestEnds: a process the test left running is killed
// and waited for by the test's cleanup; goleak (TestMain) sees that no
// goroutine is left either.
func TestReapedWhenTheTestEnds(t *testing.T) {
	var p *Process
	t.Run("leaves it running", func(t *testing.T) {
		p = startChild(t, "hang", Stdio())
		if _, err := p.WaitLine(readyLine, 10*time.Millisecond); err == nil {
			t.Fatal("hang said it was ready")
		}
	})
	if !p.Exited() {
		t.Fatal("the process outlived its test")
	}
	if _, err := p.Stdout().Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("stdout read after the test: %v, want it closed", err)
	}
}

func TestStartRefusesSetStreams(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Stderr = io.Discard
	if _, err := start(cmd, settings{}); err == nil {
		t.Error("started a command whose stderr was set")
	}
}

func TestWaitHTTPEndsWithTheContext(t *testing.T) {
	p := startChild(t, "hang")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.WaitHTTP(ctx, "http://127.0.0.1:1/", nil, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitHTTP: %v, want context.Canceled", err)
	}
}

func TestBinary(t *testing.T) {
	b := Binary{Package: "./testdata/hello"}
	path := b.Path(t)
	if again := b.Path(t); again != path {
		t.Errorf("built again: %s, then %s", path, again)
	}
	if filepath.Base(path) != "hello" {
		t.Errorf("binary named %s", path)
	}
	out, err := exec.Command(path).Output()
	if err != nil || string(out) != "hello\n" {
		t.Errorf("running it: %q, %v", out, err)
	}
	b.Remove()
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its folder is still there: %v", err)
	}
	dir, _, err := build("./testdata/no-such-package")
	if dir != "" {
		defer os.RemoveAll(dir)
	}
	if err == nil || !strings.Contains(err.Error(), "go build ./testdata/no-such-package") {
		t.Errorf("a failing build: %v", err)
	}
}
