package onnx_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/onnx"
	"github.com/prism-local/prism/errcode"
)

// This file has no build constraints: the error types and ErrNoCgo exist in
// every build, so code that matches them compiles with and without cgo.

func TestOpenMissingFolderInEveryBuild(t *testing.T) {
	_, err := onnx.Open(t.Context(), filepath.Join(t.TempDir(), "nope"), onnx.Options{})
	var le *engine.ModelLoadError
	if !errors.As(err, &le) || errcode.Of(err) != errcode.ModelLoadFailed {
		t.Fatalf("want a ModelLoadError with model_load_failed, got %T %v", err, err)
	}
	var me *onnx.MissingFileError
	switch {
	case errors.Is(err, onnx.ErrNoCgo): // a build without cgo refuses before reading the folder
	case !errors.As(err, &me) || !errors.Is(err, fs.ErrNotExist) || le.File != me.Path:
		t.Fatalf("want a MissingFileError naming the folder, got %v", err)
	}
}

func TestErrorTypesMatchThroughWrapping(t *testing.T) {
	cause := io.ErrUnexpectedEOF
	wrap := func(err error) error {
		return fmt.Errorf("serve: %w", &engine.ModelLoadError{Model: "m", Err: err})
	}
	var (
		de *onnx.DeviceError
		ge *onnx.GraphError
		ce *onnx.ConfigError
		me *onnx.MissingFileError
	)
	if err := wrap(&onnx.DeviceError{Device: onnx.DeviceCUDA, Cause: "no GPU", Err: cause}); !errors.As(err, &de) || de.Device != onnx.DeviceCUDA || !errors.Is(err, cause) {
		t.Errorf("DeviceError not matched, or its cause lost, in %v", err)
	}
	if err := wrap(&onnx.GraphError{Graph: "/m/model.onnx", Msg: "onnx runtime cannot read it", Err: cause}); !errors.As(err, &ge) || ge.Graph != "/m/model.onnx" || !errors.Is(err, cause) {
		t.Errorf("GraphError not matched, or its cause lost, in %v", err)
	}
	if err := wrap(&onnx.ConfigError{File: "/m/config.json", Field: "vocab_size", Err: cause}); !errors.As(err, &ce) || ce.Field != "vocab_size" || !errors.Is(err, cause) {
		t.Errorf("ConfigError not matched, or its cause lost, in %v", err)
	}
	if err := wrap(&onnx.MissingFileError{Path: "/m/config.json", Why: "the config"}); !errors.As(err, &me) || me.Path != "/m/config.json" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("MissingFileError not matched in %v", err)
	}
	for _, err := range []error{de, ge, ce, me} {
		if got := errcode.Of(err); got != errcode.ModelLoadFailed {
			t.Errorf("%T: code %q, want model_load_failed", err, got)
		}
	}
}
