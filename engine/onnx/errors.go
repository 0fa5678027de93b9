package onnx

import (
	"errors"
	"fmt"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/errcode"
)

// The error types live in this file without build constraints, so a
// program built with or without cgo can match them with errors.As; only
// the code that returns most of them needs cgo. Every one carries the
// code model_load_failed, and Open wraps each in an *engine.ModelLoadError.

// ErrNoCgo is the cause every Open fails with in a build without cgo.
var ErrNoCgo = errors.New("prism was built without cgo: loading ONNX models needs CGO_ENABLED=1 and a C toolchain")

// DeviceError reports that a requested execution provider cannot be used.
// Cause names what is missing (a provider library, a driver, a GPU) in the
// words a user can act on; Err is the runtime's own error.
type DeviceError struct {
	Device string
	Cause  string
	Err    error
}

// Error names the device, the cause and the runtime's own account of it.
func (e *DeviceError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("device %s unavailable: %s", e.Device, e.Cause)
	}
	return fmt.Sprintf("device %s unavailable: %s (onnx runtime: %v)", e.Device, e.Cause, e.Err)
}

// Unwrap returns the runtime's error.
func (e *DeviceError) Unwrap() error { return e.Err }

// Code returns "model_load_failed" (spec: a broken CUDA setup is a model
// that cannot be loaded).
func (e *DeviceError) Code() string { return errcode.ModelLoadFailed }

// GraphError says the decoder graph does not have the inputs or outputs a
// causal LM with a KV cache needs, or that the runtime cannot read it.
type GraphError struct {
	Graph string // path of the graph file
	Msg   string // what is wrong with it
	Err   error  // the runtime's error, if it reported one
}

// Error names the graph, the problem and the runtime's error.
func (e *GraphError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("decoder graph %s: %s", e.Graph, e.Msg)
	}
	return fmt.Sprintf("decoder graph %s: %s: %v", e.Graph, e.Msg, e.Err)
}

// Unwrap returns the runtime's error.
func (e *GraphError) Unwrap() error { return e.Err }

// Code returns "model_load_failed".
func (e *GraphError) Code() string { return errcode.ModelLoadFailed }

// loadError wraps err as the engine's ModelLoadError, lifting the file and
// field out of this package's errors for programs to read; the message says
// them once, in the cause's words (see ModelLoadError.Error).
func loadError(model string, err error) error {
	le := &engine.ModelLoadError{Model: model, Err: err}
	var ce *ConfigError
	var me *MissingFileError
	var ge *GraphError
	switch {
	case errors.As(err, &ce):
		le.File, le.Field = ce.File, ce.Field
	case errors.As(err, &me):
		le.File = me.Path
	case errors.As(err, &ge):
		le.File = ge.Graph
	}
	return le
}
