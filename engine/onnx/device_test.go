//go:build cgo

package onnx

import (
	"bytes"
	"context"
	"errors"
	"github.com/prism-local/prism/errcode"
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
		t.Skip("needs a runtime without a usable CUDA provider: this one created the session on CUDA")
	}
	var de *DeviceError
	var le *engine.ModelLoadError
	if !errors.As(err, &de) || !errors.As(err, &le) {
		t.Fatalf("want a ModelLoadError wrapping a DeviceError, got %T: %v", err, err)
	}
	if errcode.Of(err) != engine.CodeModelLoadFailed {
		t.Fatalf("code %q", errcode.Of(err))
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
		t.Skip("needs a runtime without a usable CUDA provider: this one ran the session on CUDA")
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

func TestStrictCUDAConfigOnlyOnTheCUDASession(t *testing.T) {
	user := map[string]string{"session.disable_prepacking": "1"}
	for _, tc := range []struct {
		provider string
		strict   bool
		want     string
	}{
		{DeviceCUDA, true, "1"},
		{DeviceCUDA, false, ""},
		{DeviceCPU, true, ""},
		{DeviceCPU, false, ""},
	} {
		got := sessionConfig(Options{StrictCUDA: tc.strict, SessionConfig: user}, tc.provider)
		if got[disableCPUFallback] != tc.want || got["session.disable_prepacking"] != "1" {
			t.Errorf("%s strict=%v: %v", tc.provider, tc.strict, got)
		}
	}
	if _, ok := user[disableCPUFallback]; ok {
		t.Fatal("the caller's SessionConfig was changed")
	}
}

// The runtime here acts on the key: a CPU-only session has every node on
// the CPU provider, so it is refused. This is why StrictCUDA never sets it
// on a CPU session.
func TestDisableCPUFallbackRefusesACPUSession(t *testing.T) {
	dir := modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), ""))
	_, err := Open(context.Background(), dir, Options{Device: DeviceCPU, ORTLibrary: fixtures.ORTLib(t), Logger: testLogger(t),
		SessionConfig: map[string]string{disableCPUFallback: "1"}})
	var ge *GraphError
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "fallback to CPU EP has been explicitly disabled") {
		t.Fatalf("want the runtime's CPU fallback refusal as a GraphError, got %v", err)
	}
}

func TestStrictCUDAIsNotAppliedOnTheCPU(t *testing.T) {
	dir := modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), ""))
	b := openModel(t, dir, Options{Device: DeviceCPU, StrictCUDA: true, Threads: 1})
	if _, err := b.Forward(context.Background(), []int32{1, 2, 3}, 0); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(context.Background(), dir, Options{Device: DeviceAuto, StrictCUDA: true, ORTLibrary: fixtures.ORTLib(t), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if info := b2.Info(); info.Device == DeviceCUDA {
		t.Skip("needs a runtime without a usable CUDA provider for the auto fallback: this one ran the session on CUDA")
	} else if info.Device != DeviceCPU || !strings.Contains(info.FallbackReason, "libonnxruntime_providers") {
		t.Fatalf("auto under StrictCUDA: device %q, fallback %q", info.Device, info.FallbackReason)
	}
}

// On a GPU, StrictCUDA either loads wholly on CUDA or fails naming the CPU
// placement. Without a CUDA-enabled runtime and a GPU it cannot be shown.
func TestStrictCUDAOnAGPU(t *testing.T) {
	lib := fixtures.ORTLib(t)
	if err := CUDAProvider(lib); err != nil {
		t.Skipf("needs a CUDA-enabled ONNX Runtime build and a GPU: %v", err)
	}
	dir := modelDir(t, "random-optimum-fp32", byteModel(onnxgen.Tiny(), ""))
	b, err := Open(context.Background(), dir, Options{Device: DeviceCUDA, StrictCUDA: true, ORTLibrary: lib, Logger: testLogger(t)})
	if err != nil {
		var de *DeviceError
		if !errors.As(err, &de) || !strings.Contains(de.Cause, "StrictCUDA") {
			t.Fatalf("want a DeviceError naming StrictCUDA, got %v", err)
		}
		t.Logf("some nodes stay on the CPU provider: %v", err)
		return
	}
	defer b.Close()
	if b.Info().Device != DeviceCUDA {
		t.Fatalf("device %q", b.Info().Device)
	}
}

func TestCUDASessionCause(t *testing.T) {
	refused := errors.New("This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU EP has been explicitly disabled by the user.")
	other := errors.New("CUDA failure 100: no CUDA-capable device is detected")
	for _, tc := range []struct {
		strict bool
		err    error
		want   string
	}{
		{true, refused, "StrictCUDA forbids"},
		{false, refused, "could not be created"},
		{true, other, "could not be created"},
	} {
		if got := cudaSessionCause(tc.strict, tc.err); !strings.Contains(got, tc.want) {
			t.Errorf("strict=%v %q: cause %q, want %q", tc.strict, tc.err, got, tc.want)
		}
	}
}
