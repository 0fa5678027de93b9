//go:build cgo

package onnx

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// On this machine's runtime build there is no CUDA provider: "cuda" must
// fail naming the missing library and never run on the CPU instead.
func TestCUDAFailsNamingTheCause(t *testing.T) {
	dir := modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), ""))
	b, err := Open(context.Background(), dir, Options{Device: DeviceCUDA, ORTLibrary: fixtures.ORTLib(t), Logger: testLogger(t)})
	if err == nil {
		b.Close()
		t.Skip("this runtime build has a working CUDA provider")
	}
	var de *DeviceError
	var le *engine.ModelLoadError
	if !errors.As(err, &de) || !errors.As(err, &le) {
		t.Fatalf("want a ModelLoadError wrapping a DeviceError, got %T: %v", err, err)
	}
	if engine.CodeOf(err) != engine.CodeModelLoadFailed {
		t.Fatalf("code %q", engine.CodeOf(err))
	}
	if !strings.Contains(err.Error(), "libonnxruntime_providers") {
		t.Fatalf("error does not name the missing provider library: %v", err)
	}
	assertNoRepeat(t, err.Error())
	t.Log(err)
}

func TestAutoFallsBackToCPUWithWarning(t *testing.T) {
	dir := modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), ""))
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	b, err := Open(context.Background(), dir, Options{Device: DeviceAuto, ORTLibrary: fixtures.ORTLib(t), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	info := b.Info()
	if info.Device == DeviceCUDA {
		t.Skip("this runtime build has a working CUDA provider")
	}
	if info.Device != DeviceCPU || info.FallbackReason == "" {
		t.Fatalf("device %q, fallback reason %q", info.Device, info.FallbackReason)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "libonnxruntime_providers") {
		t.Fatalf("no warning naming the cause in the log:\n%s", logs.String())
	}
}

func TestCPUReportsCPU(t *testing.T) {
	b := openModel(t, modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), "")), Options{Device: DeviceCPU, Threads: 1})
	if info := b.Info(); info.Device != DeviceCPU || info.FallbackReason != "" {
		t.Fatalf("device %q, fallback %q", info.Device, info.FallbackReason)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{Device: "tpu"}, {Threads: -1}} {
		if _, err := Open(context.Background(), t.TempDir(), o); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}

// TestSessionConfigReachesTheRuntime: an entry the runtime acts on at load
// (read the file as ORT format) must make the load of an .onnx file fail,
// and a harmless one must load and run.
func TestSessionConfigReachesTheRuntime(t *testing.T) {
	dir := modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), ""))
	_, err := Open(context.Background(), dir, Options{Device: DeviceCPU, ORTLibrary: fixtures.ORTLib(t), Logger: testLogger(t),
		SessionConfig: map[string]string{"session.load_model_format": "ORT"}})
	var ge *GraphError
	if !errors.As(err, &ge) {
		t.Fatalf("loading an .onnx file as ORT format: %v, want a GraphError", err)
	}
	b := openModel(t, dir, Options{Device: DeviceCPU, SessionConfig: map[string]string{"session.disable_prepacking": "1"}})
	if _, err := b.Forward(context.Background(), []int32{1, 2, 3}, 0); err != nil {
		t.Fatal(err)
	}
}
