//go:build cgo

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/scripted"
	"github.com/prism-local/prism/internal/testproc"
)

var (
	benchBinary = testproc.Binary{Package: "."}
	models      = scripted.Folder{Models: []scripted.Model{{Name: "hello", Answer: "Hello there, friend. How can I help you today?"}}}
)

func TestMain(m *testing.M) {
	code := m.Run()
	benchBinary.Remove()
	models.Remove()
	os.Exit(code)
}

// On a machine without an NVIDIA GPU, the built bench with -device auto
// runs on the CPU as the normal case: the report names the CPU with no
// fallback, and nothing is warned.
func TestBenchNoGPUIsNoFallback(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), benchBinary.Path(t), "-model", filepath.Join(models.Path(t), "hello"),
		"-device", "auto", "-runs", "1", "-prompt-tokens", "16", "-max-tokens", "8")
	cmd.Env = append(testproc.Environ("PRISM_", "HF_"), "PRISM_ORT_LIB="+fixtures.ORTLib(t), "PRISM_HOME="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "a GPU is visible") {
		t.Skip("NVML sees a GPU on this machine: the case is a machine without one")
	}
	out := stdout.String()
	if !strings.Contains(out, "device          cpu\n") || strings.Contains(out, "fell back") {
		t.Errorf("report:\n%s", out)
	}
	if strings.Contains(stderr.String(), "WARN") || strings.Contains(strings.ToLower(stderr.String()), "warning") {
		t.Errorf("bench warned on a machine without a GPU:\n%s", stderr.String())
	}
}
