package resources_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

// TestRefusalNamesAnotherProcessFromLockMetadata runs a second process that
// keeps a model resident, then has the budget refuse a load with fake
// memory readings: the refusal's holder is that process, read from the lock
// directory, and it disappears once the process is gone.
func TestRefusalNamesAnotherProcessFromLockMetadata(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PRISM_RESOURCES_RESIDENT_DIR="+dir, "PRISM_RESOURCES_RESIDENT_MODEL=llama-3.1-8b")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper: %q %v", line, err)
	}

	lk, err := lock.New(lock.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	model := writeFolder(t, map[string]string{"genai_config.json": qwenGenai, "config.json": qwenHF, "model.onnx": bytesOf(100)})
	c := resources.NewChecker(resources.WithLock(lk), fakeMemory(1)) // 1 GiB free < 2 GiB reserve

	_, err = c.Check(context.Background(), model, "cpu", resources.Plan{})
	var ire *resources.InsufficientResourcesError
	if !errors.As(err, &ire) {
		t.Fatalf("err = %v, want refusal", err)
	}
	if ire.Holder == nil || ire.Holder.PID != cmd.Process.Pid || ire.Holder.Model != "llama-3.1-8b" {
		t.Fatalf("holder %+v, want pid %d llama-3.1-8b", ire.Holder, cmd.Process.Pid)
	}

	cmd.Process.Kill()
	cmd.Wait()
	_, err = c.Check(context.Background(), model, "cpu", resources.Plan{})
	if !errors.As(err, &ire) || ire.Holder != nil {
		t.Fatalf("after the holder died: %v (holder %+v)", err, ire.Holder)
	}
}
