//go:build cgo

package prism_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

// TestDownstreamModule runs the tests of testdata/downstream, a module of
// its own that imports only Prism's public packages as a service would:
// against a fake ChatBackend, and against the scripted "weather" and
// "json" models for a constrained tool call and a schema answer.
func TestDownstreamModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, "test", "-count=1", "-v", "./...")
	cmd.Dir = filepath.Join("testdata", "downstream")
	cmd.Env = append(os.Environ(), "PRISM_ORT_LIB="+fixtures.ORTLib(t),
		"FORECAST_WEATHER_MODEL="+chatModel(t, "weather"), "FORECAST_JSON_MODEL="+chatModel(t, "json"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in testdata/downstream: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
