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
// code model_load_failed, and Open wraps each in an *engine.ModelLoadError,
// except StepError, the failure of a step after the load.

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

// FormError reports a model folder or graph of a form Prism does not run,
// named by the form rather than by an input the graph was never meant to
// have: a hybrid decoder with convolution or recurrent state, a paged
// cache, inputs_embeds from a separate embedding model, a fixed batch
// other than 1, and the others docs/onnx.md lists.
type FormError struct {
	File  string // the config or graph file that shows the form
	Field string // the config field, or the graph input or output, that shows it
	Form  string // the form, in words
}

// Error names the file, the field and the form.
func (e *FormError) Error() string {
	return fmt.Sprintf("%s: %s: %s: not supported", e.File, e.Field, e.Form)
}

// Code returns "model_load_failed".
func (e *FormError) Code() string { return errcode.ModelLoadFailed }

// StepError reports a runtime step of a loaded model that failed: the
// graph, the step's positions and what went wrong, wrapping the runtime's
// error when it gave one. Nothing of the step is cached, and the backend
// stays usable: the next Forward runs from the positions still cached.
type StepError struct {
	Graph  string // path of the graph file
	Pos    int    // the step's first position
	Tokens int    // how many positions the step ran
	Msg    string // what failed, "" when Err says it all
	Err    error  // the runtime's error, if any
}

// Error names the step's positions, the graph and the cause.
func (e *StepError) Error() string {
	var msg string
	switch {
	case e.Tokens == 1:
		msg = fmt.Sprintf("runtime step of 1 token at position %d of decoder graph %s", e.Pos, e.Graph)
	case e.Tokens > 1:
		msg = fmt.Sprintf("runtime step of %d tokens at positions %d-%d of decoder graph %s", e.Tokens, e.Pos, e.Pos+e.Tokens-1, e.Graph)
	default:
		msg = fmt.Sprintf("runtime step at position %d of decoder graph %s", e.Pos, e.Graph)
	}
	if e.Msg != "" {
		msg += ": " + e.Msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the runtime's error.
func (e *StepError) Unwrap() error { return e.Err }

// Code returns "inference_failed".
func (e *StepError) Code() string { return errcode.InferenceFailed }

// loadError wraps err as the engine's ModelLoadError, lifting the file and
// field out of this package's errors for programs to read; the message says
// them once, in the cause's words (see ModelLoadError.Error).
func loadError(model string, err error) error {
	le := &engine.ModelLoadError{Model: model, Err: err}
	var ce *ConfigError
	var me *MissingFileError
	var ge *GraphError
	var fe *FormError
	switch {
	case errors.As(err, &fe):
		le.File = fe.File
	case errors.As(err, &ce):
		le.File, le.Field = ce.File, ce.Field
	case errors.As(err, &me):
		le.File = me.Path
	case errors.As(err, &ge):
		le.File = ge.Graph
	}
	return le
}
