//go:build cgo

package onnx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// telemetryChild, set in a child test process's environment, makes
// TestRuntimeTelemetryOff load a model in that process and stop.
const telemetryChild = "ONNX_TEST_TELEMETRY_CHILD"

// Loading a model writes none of the runtime's telemetry state: no device
// id or event queue under the home folder, no log in /tmp. A child process
// with a fresh HOME loads the runtime, since the runtime reads the switch
// once per process; with ORT_DISABLE_TELEMETRY=0 the same child writes the
// queue, which shows the check can fail.
func TestRuntimeTelemetryOff(t *testing.T) {
	if os.Getenv(telemetryChild) != "" {
		dir := filepath.Join(t.TempDir(), "model")
		if err := onnxgen.Write(t.Context(), dir, onnxgen.Tiny()); err != nil {
			t.Fatal(err)
		}
		openModel(t, dir, Options{})
		return
	}
	lib := fixtures.ORTLib(t)
	for _, tc := range []struct {
		name   string
		env    []string
		writes bool
	}{
		{"default", nil, false},
		{"user keeps it on", []string{telemetryVar + "=0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestRuntimeTelemetryOff$")
			// The runtime stays quiet by itself under a CI's variables;
			// the child runs without them, as on a user's machine.
			cmd.Env = append(withoutVar(os.Environ(), telemetryVar, "HOME", "XDG_CACHE_HOME",
				"CI", "GITHUB_ACTIONS", "GITLAB_CI", "TF_BUILD", "ORT_RUNNING_UNIT_TESTS"),
				telemetryChild+"=1", "HOME="+home, "PRISM_ORT_LIB="+lib)
			cmd.Env = append(cmd.Env, tc.env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			queue := filepath.Join(home, ".cache", "Microsoft", "DeveloperTools", ".onnxruntime")
			_, err := os.Stat(queue)
			if wrote := err == nil; wrote != tc.writes {
				t.Fatalf("%s exists: %v; want %v", queue, wrote, tc.writes)
			}
			log := fmt.Sprintf("/tmp/mat-debug-%d.log", cmd.Process.Pid)
			_, err = os.Stat(log)
			os.Remove(log)
			if wrote := err == nil; wrote != tc.writes {
				t.Fatalf("%s exists: %v; want %v", log, wrote, tc.writes)
			}
		})
	}
}

func withoutVar(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if len(kv) > len(n) && kv[:len(n)+1] == n+"=" {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
