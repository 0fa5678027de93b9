package mcpserver

import (
	"context"
	"errors"
	"strings"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/app/backend"
)

// toolError is a tool's failure as the client sees it: "code: message".
type toolError struct {
	code string
	msg  string
	err  error
}

func (e *toolError) Error() string {
	if e.code == "" {
		return e.msg
	}
	return e.code + ": " + e.msg
}

func (e *toolError) Code() string  { return e.code }
func (e *toolError) Unwrap() error { return e.err }

// toolErr names err's code in the message the client reads; a cancelled
// call says so.
func toolErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return &toolError{code: "cancelled", msg: "the call was cancelled", err: err}
	}
	code := errcode.Of(err)
	msg := err.Error()
	if code != "" && len(msg) > len(code)+2 && msg[:len(code)+2] == code+": " {
		msg = msg[len(code)+2:]
	}
	if w := backend.Warnings(err); len(w) > 0 {
		msg += " [" + strings.Join(w, "; ") + "]"
	}
	return &toolError{code: code, msg: msg, err: err}
}
