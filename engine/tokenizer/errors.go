package tokenizer

import (
	"fmt"

	"github.com/prism-local/prism/errcode"
)

// Error is the error Load returns; its code is always model_load_failed.
// Component names the tokenizer.json component at fault when there is one
// (for example "pre_tokenizer.Split" or "model.WordPiece").
type Error struct {
	Path      string // file being read
	Component string // offending component, "" when the file itself is at fault
	Err       error  // cause
}

// Code returns "model_load_failed": a tokenizer that cannot be read is a
// model that cannot be loaded.
func (e *Error) Code() string { return errcode.ModelLoadFailed }

// Error implements error.
func (e *Error) Error() string {
	if e.Component != "" {
		return fmt.Sprintf("tokenizer: load %s: %s: %v", e.Path, e.Component, e.Err)
	}
	return fmt.Sprintf("tokenizer: load %s: %v", e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrUnsupported is wrapped by load errors for components this package does
// not implement; match it with errors.Is.
var ErrUnsupported = unsupportedError{}

type unsupportedError struct{}

func (unsupportedError) Error() string { return "unsupported component" }

// componentError reports a problem with one component while building.
type componentError struct {
	component string
	err       error
}

func (e *componentError) Error() string { return e.component + ": " + e.err.Error() }
func (e *componentError) Unwrap() error { return e.err }

func unsupported(component, detail string) error {
	if detail != "" {
		return &componentError{component: component, err: fmt.Errorf("%w: %s", ErrUnsupported, detail)}
	}
	return &componentError{component: component, err: ErrUnsupported}
}

func badComponent(component string, format string, args ...any) error {
	return &componentError{component: component, err: fmt.Errorf(format, args...)}
}
