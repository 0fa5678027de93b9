//go:build cgo

package onnx

import (
	"fmt"
	"os"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/prism-local/prism/internal/ortlib"
)

// runtimeState is the one piece of package-level state in Prism's ONNX
// backend, and the binding forces it: onnxruntime_go keeps the loaded
// library and its OrtEnv in process-global variables
// (SetSharedLibraryPath / InitializeEnvironment may succeed once per
// process), so every model in the process shares one runtime. The mutex
// (rather than a sync.Once) lets a failed load be retried with a corrected
// path; once loaded, the environment lives as long as the process.
type runtimeState struct {
	mu      sync.Mutex
	path    string // library loaded, "" until loaded
	version string
}

var ortRuntime runtimeState

// loadRuntime makes sure the ONNX Runtime library is loaded and its
// environment initialised, returning the library path in use. explicit is
// the caller's option; "" means the default cache (this package reads no
// environment: PRISM_ORT_LIB reaches it as the option).
func loadRuntime(explicit string) (string, error) {
	path, _, err := ortlib.Find(explicit, ortlib.FromOption, "")
	ortRuntime.mu.Lock()
	defer ortRuntime.mu.Unlock()
	if ortRuntime.path != "" {
		// Already loaded: a different explicit path cannot be honoured.
		if explicit == "" {
			return ortRuntime.path, nil
		}
		if err != nil {
			return "", err
		}
		if path != ortRuntime.path {
			return "", fmt.Errorf("onnx runtime already loaded from %s in this process; it cannot also load %s (one runtime library per process)", ortRuntime.path, path)
		}
		return ortRuntime.path, nil
	}
	if err != nil {
		return "", err
	}
	if err := quietRuntime(); err != nil {
		return "", err
	}
	ort.SetSharedLibraryPath(path)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return "", fmt.Errorf("load onnx runtime library %s: %w", path, err)
	}
	ortRuntime.path = path
	ortRuntime.version = ort.GetVersion()
	return path, nil
}

// telemetryVar is ONNX Runtime's own switch for the telemetry its official
// builds carry (1.29 and later, on Linux and macOS too). Unless it is 1,
// the runtime keeps a device id and a queue of usage events (model,
// provider, process path, resource use) under
// ~/.cache/Microsoft/DeveloperTools/.onnxruntime, logs to
// /tmp/mat-debug-PID.log, and uploads the events when it can reach
// Microsoft. It is read once, when the environment is created.
const telemetryVar = "ORT_DISABLE_TELEMETRY"

// quietRuntime turns the runtime's telemetry off for this process before
// the environment exists: a local inference library does not report on its
// user. A value the process already has is the user's own choice and is
// kept (ORT_DISABLE_TELEMETRY=0 leaves the runtime as shipped).
func quietRuntime() error {
	if _, set := os.LookupEnv(telemetryVar); set {
		return nil
	}
	if err := os.Setenv(telemetryVar, "1"); err != nil {
		return fmt.Errorf("turn off the onnx runtime's telemetry (%s=1): %w", telemetryVar, err)
	}
	return nil
}

// LoadRuntime loads the ONNX Runtime library at lib ("" for the default
// cache), as Open does, and returns the version the library itself
// reports (the C API's version string). A process loads one library: a
// second, different lib is an error.
func LoadRuntime(lib string) (string, error) {
	if _, err := loadRuntime(lib); err != nil {
		return "", err
	}
	return RuntimeVersion(), nil
}

// RuntimeVersion reports the version of the loaded ONNX Runtime library, or
// "" when none is loaded yet.
func RuntimeVersion() string {
	ortRuntime.mu.Lock()
	defer ortRuntime.mu.Unlock()
	return ortRuntime.version
}
