package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prism-local/prism/errcode"
)

// Error codes carried by the typed errors of this package. They are the
// constants of package errcode, where every code is defined, named here
// beside the errors that carry them.
const (
	CodeModelLoadFailed       = errcode.ModelLoadFailed
	CodeContextLengthExceeded = errcode.ContextLengthExceeded
	CodeInvalidRequest        = errcode.InvalidRequest
	CodeServerBusy            = errcode.ServerBusy
	CodeClientDisconnected    = errcode.ClientDisconnected
	CodeEngineClosed          = errcode.EngineClosed
)

// DefaultRetryAfter is the retry delay a [ServerBusyError] carries.
const DefaultRetryAfter = 30 * time.Second

// ModelLoadError reports a model that could not be loaded. It names the file
// or configuration field at fault where there is one and wraps the cause.
type ModelLoadError struct {
	// Model is the model as the caller named it.
	Model string
	// File is the file at fault, if any.
	File string
	// Field is the configuration field at fault, if any.
	Field string
	// Err is the underlying cause.
	Err error
}

// Error describes the failure: the model, the file and the field, each
// unless the cause already names it (engine/onnx lifts File and Field out
// of its config errors, whose own message says them; a lock timeout names
// the model), then the cause.
func (e *ModelLoadError) Error() string {
	var cause string
	if e.Err != nil {
		cause = e.Err.Error()
	}
	var b strings.Builder
	b.WriteString("load model")
	if e.Model != "" && !names(cause, e.Model) {
		fmt.Fprintf(&b, " %q", e.Model)
	}
	if e.File != "" && !names(cause, e.File) {
		fmt.Fprintf(&b, ": file %s", e.File)
	}
	if e.Field != "" && !names(cause, e.Field) {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	if cause != "" {
		b.WriteString(": ")
		b.WriteString(cause)
	}
	return b.String()
}

// names reports whether msg says word as a whole: not as the start of a
// longer path or name ("/m" does not name the model "/m" in
// "/m/config.json", which says only where the file is).
func names(msg, word string) bool {
	part := func(c byte) bool {
		return c == '/' || c == '.' || c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		if (start == 0 || !part(msg[start-1])) && (end == len(msg) || !part(msg[end])) {
			return true
		}
		i = start + 1
	}
}

// Unwrap returns the cause.
func (e *ModelLoadError) Unwrap() error { return e.Err }

// Code returns the code of the wrapped cause when it carries a more specific
// one (for example insufficient_resources from the resources package), and
// model_load_failed otherwise.
func (e *ModelLoadError) Code() string {
	if c := errcode.Of(e.Err); c != "" {
		return c
	}
	return CodeModelLoadFailed
}

// ContextLengthError reports a prompt that leaves no room in the model's
// context window for even one generated token. It is returned before any
// model work is done.
type ContextLengthError struct {
	// PromptTokens is the length of the prompt in tokens.
	PromptTokens int
	// ContextLength is the model's context window in tokens.
	ContextLength int
	// MaxPrompt, when positive, is a limit on the prompt below the window:
	// a model that prefills every prompt in one step (ModelInfo.Prefill)
	// takes at most the prefill chunk the memory budget was sized for.
	MaxPrompt int
	// Reason says why MaxPrompt applies.
	Reason string
}

// Error says how long the prompt is and how much fits.
func (e *ContextLengthError) Error() string {
	if e.MaxPrompt > 0 {
		return fmt.Sprintf("this model takes prompts of at most %d tokens here, but the prompt has %d tokens: %s",
			e.MaxPrompt, e.PromptTokens, e.Reason)
	}
	return fmt.Sprintf("this model's maximum context length is %d tokens, but the prompt has %d tokens "+
		"and at least one must be left to generate; shorten the prompt to at most %d tokens",
		e.ContextLength, e.PromptTokens, e.ContextLength-1)
}

// Code returns context_length_exceeded.
func (e *ContextLengthError) Code() string { return CodeContextLengthExceeded }

// ParamName blames the conversation: the prompt it renders is too long.
func (e *ContextLengthError) ParamName() string { return "messages" }

// InvalidRequestError reports a request parameter with an invalid value.
type InvalidRequestError struct {
	// Param names the offending field as the OpenAI API spells it
	// ("temperature", "top_p", "stop", ...).
	Param string
	// Message says what is wrong and what is allowed.
	Message string
}

// Error names the parameter and the problem.
func (e *InvalidRequestError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Param, e.Message)
}

// Code returns invalid_request_error.
func (e *InvalidRequestError) Code() string { return CodeInvalidRequest }

// ParamName returns Param.
func (e *InvalidRequestError) ParamName() string { return e.Param }

// ErrServerBusy is matched (errors.Is) by every [ServerBusyError].
var ErrServerBusy = errors.New("server busy")

// ServerBusyError reports a request the Manager turned away: the queue was
// full, or the request waited longer than the queue timeout.
type ServerBusyError struct {
	// Reason says which limit was hit.
	Reason string
	// RetryAfter is how long the client should wait before retrying.
	RetryAfter time.Duration
}

// Error describes the refusal and the retry delay.
func (e *ServerBusyError) Error() string {
	return fmt.Sprintf("server busy: %s; retry after %s", e.Reason, e.RetryAfter)
}

// Code returns server_busy.
func (e *ServerBusyError) Code() string { return CodeServerBusy }

// Is reports whether target is [ErrServerBusy].
func (e *ServerBusyError) Is(target error) bool { return target == ErrServerBusy }

// ClientDisconnectedError reports a waiter that left the Manager's queue
// because its client went away (isAlive returned false) or its context was
// cancelled. No response should be attempted: the peer is gone.
type ClientDisconnectedError struct {
	// Err is the context's error when the context ended the wait, or nil
	// when isAlive did.
	Err error
}

// Error says the client went away while waiting.
func (e *ClientDisconnectedError) Error() string {
	if e.Err != nil {
		return "client disconnected while waiting for the engine: " + e.Err.Error()
	}
	return "client disconnected while waiting for the engine"
}

// Unwrap returns the context's error, if any.
func (e *ClientDisconnectedError) Unwrap() error { return e.Err }

// Code returns client_disconnected.
func (e *ClientDisconnectedError) Code() string { return CodeClientDisconnected }

// ErrClosed is returned when an Engine or Manager is used after Close.
var ErrClosed = &closedError{}

type closedError struct{}

func (*closedError) Error() string { return "engine is closed" }
func (*closedError) Code() string  { return CodeEngineClosed }
