package wire

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/prism-local/prism/errcode"
)

// Codes of the errors this package returns, package errcode's. The strings
// are the spec's and OpenAI's, so a client that switches on error.code sees the same value
// from Prism as from OpenAI.
const (
	// CodeInvalidRequest: a malformed body or a field of the wrong type or
	// value (HTTP 400).
	CodeInvalidRequest = errcode.InvalidRequest
	// CodeUnknownParameter: a top-level parameter OpenAI does not define
	// either (HTTP 400).
	CodeUnknownParameter = errcode.UnknownParameter
	// CodeUnsupportedParameter: a known parameter whose value Prism cannot
	// honour (HTTP 400).
	CodeUnsupportedParameter = errcode.UnsupportedParameter
	// CodeRequestTooLarge: a body over MaxBodyBytes (HTTP 413).
	CodeRequestTooLarge = errcode.RequestTooLarge
)

// Error types of the error body (error.type), as OpenAI names them.
const (
	// TypeInvalidRequest is the type of every 4xx error.
	TypeInvalidRequest = "invalid_request_error"
	// TypeServer is the type of every 5xx error.
	TypeServer = "server_error"
)

// Error is a request the server refuses before doing any work. Match it
// with errors.As; Code returns the machine code.
type Error struct {
	// Status is the HTTP status to answer with.
	Status int
	// ErrCode is one of the Code* constants.
	ErrCode string
	// Param is the JSON path of the field at fault ("messages[0].role"),
	// "" when the body as a whole is at fault.
	Param string
	// Message says what is wrong and, where there is one, what is accepted.
	Message string
}

func (e *Error) Error() string { return e.Message }

// Code returns the error's machine code.
func (e *Error) Code() string { return e.ErrCode }

// ParamName returns Param.
func (e *Error) ParamName() string { return e.Param }

// Body returns the error as the JSON body the server sends.
func (e *Error) Body() ErrorBody {
	return NewErrorBody(e.Status, e.ErrCode, e.Param, e.Message)
}

func invalid(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, ErrCode: CodeInvalidRequest, Param: clip(param), Message: fmt.Sprintf(format, clipped(args)...)}
}

func unsupported(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, ErrCode: CodeUnsupportedParameter, Param: clip(param), Message: fmt.Sprintf(format, clipped(args)...)}
}

// maxQuoted is how much of a value from the request an error repeats: a
// 10 MB role is not sent back whole.
const maxQuoted = 100

func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func clipped(args []any) []any {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = clip(s)
		}
	}
	return args
}

// ErrorBody is the JSON error body: {"error": {"message", "type", "code",
// "param"}}, with code and param null when there is none, as OpenAI sends
// them.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the inside of an ErrorBody.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    *string `json:"code"`
	Param   *string `json:"param"`
	// Holder names the process holding the model-load lock on a 503
	// insufficient_resources (spec P12); absent, not null, when unknown.
	Holder *Holder `json:"holder,omitempty"`
}

// Holder is the process that holds the model-load lock.
type Holder struct {
	PID   int    `json:"pid"`
	Model string `json:"model"`
}

// NewErrorBody builds an error body. The type is invalid_request_error
// below status 500 and server_error from 500 on; an empty code or param is
// sent as null.
func NewErrorBody(status int, code, param, message string) ErrorBody {
	typ := TypeInvalidRequest
	if status >= 500 {
		typ = TypeServer
	}
	return ErrorBody{Error: ErrorObject{Message: message, Type: typ, Code: nullable(code), Param: nullable(param)}}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
