//go:build !cgo

package onnx

import (
	"context"

	"github.com/prism-local/prism/engine"
)

// Backend is not available without cgo; Open always fails.
type Backend struct{}

var (
	_ engine.Backend  = (*Backend)(nil)
	_ engine.Verifier = (*Backend)(nil)
)

// Open fails with a ModelLoadError wrapping ErrNoCgo: ONNX Runtime is
// reached through cgo.
func Open(_ context.Context, dir string, opts Options) (*Backend, error) {
	id := opts.ID
	if id == "" {
		id = dir
	}
	return nil, loadError(id, ErrNoCgo)
}

// Info reports nothing: a Backend cannot exist without cgo.
func (*Backend) Info() engine.ModelInfo { return engine.ModelInfo{} }

// Layout reports "": a Backend cannot exist without cgo.
func (*Backend) Layout() Layout { return "" }

// SearchDefaults reports no defaults: a Backend cannot exist without cgo.
func (*Backend) SearchDefaults() SearchDefaults { return SearchDefaults{} }

// BOS reports no id: a Backend cannot exist without cgo.
func (*Backend) BOS() (int32, bool) { return 0, false }

// Capacity reports 0: a Backend cannot exist without cgo.
func (*Backend) Capacity() int { return 0 }

// Reserve fails with ErrNoCgo.
func (*Backend) Reserve(int) error { return ErrNoCgo }

// Forward fails with ErrNoCgo.
func (*Backend) Forward(context.Context, []int32, int) ([]float32, error) { return nil, ErrNoCgo }

// Verify fails with ErrNoCgo.
func (*Backend) Verify(context.Context, []int32, int) ([]float32, error) { return nil, ErrNoCgo }

// Close does nothing.
func (*Backend) Close() error { return nil }

// LoadRuntime fails with ErrNoCgo: no runtime can be loaded without cgo.
func LoadRuntime(string) (string, error) { return "", ErrNoCgo }

// RuntimeVersion reports "": no runtime can be loaded without cgo.
func RuntimeVersion() string { return "" }

// CUDAProvider fails with ErrNoCgo: no runtime can be loaded without cgo.
func CUDAProvider(string) error { return ErrNoCgo }

// Admit fails: there is no backend without cgo.
func (*Backend) Admit(int) error { return ErrNoCgo }

// Decode fails: there is no backend without cgo.
func (*Backend) Decode(context.Context, []int, []int32) ([]float32, error) { return nil, ErrNoCgo }

// Drop does nothing without cgo.
func (*Backend) Drop(int) {}
