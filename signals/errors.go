package signals

import (
	"errors"
	"fmt"

	"github.com/prism-local/prism/errcode"
)

// Error codes carried by [Error]. They are stable and machine-readable;
// transports map them to their own status values. Each is the constant of
// package errcode, where every code is defined.
const (
	CodeInvalidArgument  = errcode.InvalidArgument
	CodeNotFound         = errcode.NotFound
	CodeNotBootstrapped  = errcode.NotBootstrapped
	CodeSessionEnded     = errcode.SessionEnded
	CodeIdentityMismatch = errcode.IdentityMismatch
	CodeUnknownVerb      = errcode.UnknownVerb
	CodeAlreadyExists    = errcode.AlreadyExists
	CodeNotExecutor      = errcode.NotExecutor
	CodeOutcomeConflict  = errcode.OutcomeConflict
	CodeNotTerminal      = errcode.NotTerminal
	CodeTurnFailed       = errcode.TurnFailed
	CodeStoreClosed      = errcode.StoreClosed
	CodeStore            = errcode.StoreFailed
)

// Error is the typed error of this package and of its stores. Match it with
// errors.As and read its code with Code, or compare codes with errors.Is
// against the Err* values:
//
//	if errors.Is(err, signals.ErrNotFound) { ... }
//
// Build one with [NewError], [Errorf] or [StoreError]: the code is set only
// there.
type Error struct {
	// code is one of the Code* constants.
	code string
	// Op names the operation that failed, such as "drain" or "record".
	Op string
	// Msg says what went wrong and, where there is one, the fix.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

// NewError returns an *Error with code, op, message and cause (which may
// be nil).
func NewError(code, op, msg string, err error) *Error {
	return &Error{code: code, Op: op, Msg: msg, Err: err}
}

// Code returns the error's code, one of the Code* constants.
func (e *Error) Code() string { return e.code }

// Error formats op, message and cause.
func (e *Error) Error() string {
	s := "signals"
	if e.Op != "" {
		s += " " + e.Op
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Msg == "" && e.Err == nil {
		s += ": " + e.code
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, ErrNotFound) matches any not-found error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.code == e.code && t.Op == "" && t.Msg == "" && t.Err == nil
}

// Sentinel values for errors.Is. Each matches every [Error] with its code.
var (
	ErrInvalidArgument  = &Error{code: CodeInvalidArgument}
	ErrNotFound         = &Error{code: CodeNotFound}
	ErrNotBootstrapped  = &Error{code: CodeNotBootstrapped}
	ErrSessionEnded     = &Error{code: CodeSessionEnded}
	ErrIdentityMismatch = &Error{code: CodeIdentityMismatch}
	ErrUnknownVerb      = &Error{code: CodeUnknownVerb}
	ErrAlreadyExists    = &Error{code: CodeAlreadyExists}
	ErrNotExecutor      = &Error{code: CodeNotExecutor}
	ErrOutcomeConflict  = &Error{code: CodeOutcomeConflict}
	ErrNotTerminal      = &Error{code: CodeNotTerminal}
	ErrTurnFailed       = &Error{code: CodeTurnFailed}
	ErrStoreClosed      = &Error{code: CodeStoreClosed}
	ErrStore            = &Error{code: CodeStore}
)

// Errorf returns an *Error with code and op and a formatted message. Stores
// use it to report failures in this package's terms.
func Errorf(code, op, format string, args ...any) *Error {
	return &Error{code: code, Op: op, Msg: fmt.Sprintf(format, args...)}
}

// StoreError wraps a database failure of op as a store_failed error. A nil
// err returns nil; an err that already is an *Error is returned unchanged.
func StoreError(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{code: CodeStore, Op: op, Err: err}
}
