//go:build !cgo

package onnx

import (
	"context"
	"errors"

	"github.com/prism-local/prism/engine"
)

// ErrNoCgo is the cause every Open fails with in a build without cgo.
var ErrNoCgo = errors.New("prism was built without cgo: loading ONNX models needs CGO_ENABLED=1 and a C toolchain")

// Backend is not available without cgo; Open always fails.
type Backend struct{}

var _ engine.Backend = (*Backend)(nil)

// Open fails with a ModelLoadError wrapping ErrNoCgo: ONNX Runtime is
// reached through cgo.
func Open(_ context.Context, dir string, opts Options) (*Backend, error) {
	id := opts.ID
	if id == "" {
		id = dir
	}
	return nil, &engine.ModelLoadError{Model: id, Err: ErrNoCgo}
}

// Info reports nothing: a Backend cannot exist without cgo.
func (*Backend) Info() engine.ModelInfo { return engine.ModelInfo{} }

// Reserve fails with ErrNoCgo.
func (*Backend) Reserve(int) error { return ErrNoCgo }

// Forward fails with ErrNoCgo.
func (*Backend) Forward(context.Context, []int32, int) ([]float32, error) { return nil, ErrNoCgo }

// Close does nothing.
func (*Backend) Close() error { return nil }

// RuntimeVersion reports "": no runtime can be loaded without cgo.
func RuntimeVersion() string { return "" }

// CUDAProvider fails with ErrNoCgo: no runtime can be loaded without cgo.
func CUDAProvider(string) error { return ErrNoCgo }
