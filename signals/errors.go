package signals

import (
	"errors"
	"fmt"
)

// Error codes carried by [Error]. They are stable and machine-readable;
// transports map them to their own status values.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodeNotFound         = "not_found"
	CodeNotBootstrapped  = "not_bootstrapped"
	CodeSessionEnded     = "session_ended"
	CodeIdentityMismatch = "identity_mismatch"
	CodeUnknownVerb      = "unknown_verb"
	CodeAlreadyExists    = "already_exists"
	CodeNotExecutor      = "not_executor"
	CodeOutcomeConflict  = "outcome_conflict"
	CodeNotTerminal      = "not_terminal"
	CodeTurnFailed       = "turn_failed"
	CodeStoreClosed      = "store_closed"
	CodeStore            = "store_failed"
)

// Error is the typed error of this package and of its stores. Match it with
// errors.As, or compare codes with errors.Is against the Err* values:
//
//	if errors.Is(err, signals.ErrNotFound) { ... }
type Error struct {
	// Code is one of the Code* constants.
	Code string
	// Op names the operation that failed, such as "drain" or "record".
	Op string
	// Msg says what went wrong and, where there is one, the fix.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

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
		s += ": " + e.Code
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, ErrNotFound) matches any not-found error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Op == "" && t.Msg == "" && t.Err == nil
}

// Sentinel values for errors.Is. Each matches every [Error] with its code.
var (
	ErrInvalidArgument  = &Error{Code: CodeInvalidArgument}
	ErrNotFound         = &Error{Code: CodeNotFound}
	ErrNotBootstrapped  = &Error{Code: CodeNotBootstrapped}
	ErrSessionEnded     = &Error{Code: CodeSessionEnded}
	ErrIdentityMismatch = &Error{Code: CodeIdentityMismatch}
	ErrUnknownVerb      = &Error{Code: CodeUnknownVerb}
	ErrAlreadyExists    = &Error{Code: CodeAlreadyExists}
	ErrNotExecutor      = &Error{Code: CodeNotExecutor}
	ErrOutcomeConflict  = &Error{Code: CodeOutcomeConflict}
	ErrNotTerminal      = &Error{Code: CodeNotTerminal}
	ErrTurnFailed       = &Error{Code: CodeTurnFailed}
	ErrStoreClosed      = &Error{Code: CodeStoreClosed}
	ErrStore            = &Error{Code: CodeStore}
)

// Errorf returns an *Error with code and op and a formatted message. Stores
// use it to report failures in this package's terms.
func Errorf(code, op, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Msg: fmt.Sprintf(format, args...)}
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
	return &Error{Code: CodeStore, Op: op, Err: err}
}

// CodeOf returns the code of the first [Error] in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
