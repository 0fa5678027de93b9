package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/hubtest"
	"github.com/prism-local/prism/internal/onnxgen"
)

func fakeHub(t *testing.T) *hubtest.Hub {
	t.Helper()
	cfg := onnxgen.Tiny()
	cfg.Variants = []string{"fp32", "q4"}
	dir := t.TempDir()
	if err := onnxgen.Write(t.Context(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t)
	h.AddModel(t, "onnx-community/Tiny-ONNX", dir)
	gated := h.AddModel(t, "gated/Tiny-ONNX", dir)
	gated.Gated = true
	return h
}

func TestPullCommand(t *testing.T) {
	h := fakeHub(t)
	cache := t.TempDir()
	env := []string{"HF_ENDPOINT=" + h.URL, "HF_HUB_CACHE=" + cache, "HOME=" + t.TempDir()}
	cases := []struct {
		name     string
		args     []string
		terminal bool
		code     int
		stdout   []string
		stderr   []string
	}{
		{"plain lines", []string{"onnx-community/Tiny-ONNX:q4", "-revision", "main"}, false, 0,
			[]string{"pulled onnx-community/Tiny-ONNX@", "(q4; 4 files", "other variants on the hub: fp32", filepath.Join(cache, "models--onnx-community--Tiny-ONNX", "snapshots"), "go run ./examples/serve -model onnx-community/Tiny-ONNX"},
			[]string{"listing onnx-community/Tiny-ONNX at main", "onnx/model_q4.onnx_data", "done onnx-community/Tiny-ONNX"}},
		{"bar on a terminal", []string{"-parallel", "2", "onnx-community/Tiny-ONNX"}, true, 0, []string{"(fp32; "}, []string{"4/4 files"}},
		{"gated", []string{"gated/Tiny-ONNX"}, false, 1, nil, []string{"HF_TOKEN", "accept its licence", "hub_access_denied"}},
		{"unknown revision", []string{"onnx-community/Tiny-ONNX", "-revision", "v2"}, false, 1, nil, []string{`revision "v2" not found`}},
		{"no model", nil, false, 2, nil, []string{"usage: pull OWNER/NAME[:VARIANT]"}},
		{"bad variant", []string{"onnx-community/Tiny-ONNX:q5"}, false, 1, nil, []string{`variant "q5"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, env, &stdout, &stderr, tc.terminal)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, &stdout, &stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout does not say %q:\n%s", s, &stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr does not say %q:\n%s", s, &stderr)
				}
			}
		})
	}
	// Offline, the model pulled above comes from the cache alone.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"onnx-community/Tiny-ONNX:q4"}, append(env, "HF_HUB_OFFLINE=1", "HF_ENDPOINT=http://127.0.0.1:1"), &stdout, &stderr, false); code != 0 {
		t.Fatalf("offline: exit %d: %s", code, &stderr)
	}
	if _, err := os.Stat(strings.Split(stdout.String(), "\n")[1]); err != nil {
		t.Fatalf("offline result: %v\n%s", err, &stdout)
	}
}
