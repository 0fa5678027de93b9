//go:build cgo

package onnx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ort "github.com/yalue/onnxruntime_go"
)

// sessionOptions builds the options for one session on provider ("cpu" or
// "cuda"). The caller destroys the result.
func sessionOptions(cfg *modelConfig, opts Options, provider, libPath string) (*ort.SessionOptions, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("create session options: %w", err)
	}
	threads := opts.Threads
	if threads == 0 {
		threads = cfg.intraOpThreads
	}
	if threads > 0 {
		if err := so.SetIntraOpNumThreads(threads); err != nil {
			so.Destroy()
			return nil, fmt.Errorf("set intra-op threads to %d: %w", threads, err)
		}
	}
	if cfg.interOpThreads > 0 {
		if err := so.SetInterOpNumThreads(cfg.interOpThreads); err != nil {
			so.Destroy()
			return nil, fmt.Errorf("set inter-op threads to %d: %w", cfg.interOpThreads, err)
		}
	}
	for k, v := range sessionConfig(opts, provider) {
		if err := so.AddSessionConfigEntry(k, v); err != nil {
			so.Destroy()
			return nil, fmt.Errorf("session config entry %q = %q: %w", k, v, err)
		}
	}
	if provider == DeviceCUDA {
		if err := appendCUDA(so, cfg.providerOptions["cuda"], libPath); err != nil {
			so.Destroy()
			return nil, err
		}
	}
	return so, nil
}

// disableCPUFallback is the ONNX Runtime session config key that makes
// session creation fail when any node would be placed on the CPU provider.
const disableCPUFallback = "session.disable_cpu_ep_fallback"

// sessionConfig is the caller's session config for a session on provider,
// plus disableCPUFallback on the CUDA session under StrictCUDA. It is never
// added to a CPU session: there every node is on the CPU provider, and the
// runtime refuses the session.
func sessionConfig(opts Options, provider string) map[string]string {
	if !opts.StrictCUDA || provider != DeviceCUDA {
		return opts.SessionConfig
	}
	out := make(map[string]string, len(opts.SessionConfig)+1)
	for k, v := range opts.SessionConfig {
		out[k] = v
	}
	out[disableCPUFallback] = "1"
	return out
}

// cudaSessionCause says why a session the CUDA provider was added to could
// not be created. The runtime's own message is the only sign that the CPU
// fallback check refused it; it stays in the wrapped error.
func cudaSessionCause(strict bool, err error) string {
	if strict && strings.Contains(err.Error(), "fallback to CPU EP has been explicitly disabled") {
		return "some nodes are not taken by the CUDA provider and StrictCUDA forbids running them on the CPU provider"
	}
	return "the session could not be created on the CUDA provider"
}

// appendCUDA adds the CUDA execution provider, turning the runtime's terse
// failure into a DeviceError naming the missing piece.
func appendCUDA(so *ort.SessionOptions, providerOpts map[string]string, libPath string) error {
	co, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return &DeviceError{Device: DeviceCUDA, Cause: cudaCause(libPath), Err: err}
	}
	defer co.Destroy()
	if len(providerOpts) > 0 {
		if err := co.Update(providerOpts); err != nil {
			return &DeviceError{Device: DeviceCUDA, Cause: "the cuda provider_options in genai_config.json were refused", Err: err}
		}
	}
	// The runtime logs its own account of a failed provider load at error
	// level; the DeviceError carries the cause, so keep stderr quiet here.
	_ = ort.SetEnvironmentLogLevel(ort.LoggingLevelFatal)
	err = so.AppendExecutionProviderCUDA(co)
	_ = ort.SetEnvironmentLogLevel(ort.LoggingLevelError)
	if err != nil {
		return &DeviceError{Device: DeviceCUDA, Cause: cudaCause(libPath), Err: err}
	}
	return nil
}

// Provider libraries the runtime loads from its own directory for CUDA.
const (
	providersSharedLib = "libonnxruntime_providers_shared.so"
	providersCUDALib   = "libonnxruntime_providers_cuda.so"
)

// cudaCause explains why the CUDA provider cannot be loaded beside the
// runtime library at libPath.
func cudaCause(libPath string) string {
	dir := filepath.Dir(libPath)
	for _, name := range []string{providersSharedLib, providersCUDALib} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return fmt.Sprintf("%s is missing: the ONNX Runtime build at %s has no CUDA execution provider; "+
				"install a CUDA-enabled ONNX Runtime %s build and point PRISM_ORT_LIB at its libonnxruntime.so", p, libPath, "1.30")
		}
	}
	if msg := dlopenError(filepath.Join(dir, providersCUDALib)); msg != "" {
		return fmt.Sprintf("the CUDA provider library cannot be loaded: %s (install the CUDA and cuDNN runtime libraries it needs, or fix LD_LIBRARY_PATH)", msg)
	}
	return "the CUDA provider library loads, but the runtime refused it (no usable GPU or driver?)"
}

// CUDAProvider reports whether the ONNX Runtime library (ortLibrary; ""
// finds it as Open does) has a CUDA execution provider Prism can use: nil
// when the provider can be added to a session, else a *DeviceError naming
// what is missing. It loads the runtime library if no Open has yet. A GPU is
// not proven by it: creating the session can still fail, and a DeviceAuto
// load then runs on the CPU. prism.Open asks it before the memory budget, so
// that auto is budgeted for the device the load will really use.
func CUDAProvider(ortLibrary string) error {
	lib, err := loadRuntime(ortLibrary)
	if err != nil {
		return err
	}
	so, err := ort.NewSessionOptions()
	if err != nil {
		return fmt.Errorf("create session options: %w", err)
	}
	defer so.Destroy()
	return appendCUDA(so, nil, lib)
}
