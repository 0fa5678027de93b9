package ollama

import (
	"fmt"

	"github.com/prism-local/prism/errcode"
)

// Error is a failure talking to Ollama or one Ollama reported.
type Error struct {
	// ErrCode is one of errcode's codes: BackendUnavailable,
	// ModelNotFound, InvalidRequest or ToolsNotSupported.
	ErrCode string
	// Op names the call: "chat", "embed" or "list models".
	Op string
	// Status is the HTTP status Ollama answered with; 0 when it did not
	// answer (unreachable) or failed inside a stream.
	Status int
	// Message says what went wrong, in Ollama's words where it gave some.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error formats the failure with the call and, where there is one, Ollama's
// status.
func (e *Error) Error() string {
	s := "ollama " + e.Op + ": " + e.Message
	if e.Status != 0 {
		s = fmt.Sprintf("ollama %s: %s (HTTP %d)", e.Op, e.Message, e.Status)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Code returns the errcode code.
func (e *Error) Code() string { return e.ErrCode }

// ParamName blames the model for a model Ollama does not have and the
// tools for tools it refuses; nothing else.
func (e *Error) ParamName() string {
	switch e.ErrCode {
	case errcode.ModelNotFound:
		return "model"
	case errcode.ToolsNotSupported:
		return "tools"
	}
	return ""
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

var _ errcode.Coder = (*Error)(nil)

func unavailable(op, msg string, err error) *Error {
	return &Error{ErrCode: errcode.BackendUnavailable, Op: op, Message: msg, Err: err}
}
