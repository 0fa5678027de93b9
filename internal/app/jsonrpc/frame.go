package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The JSON-RPC 2.0 error codes.
const (
	CodeParse          = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeServer is the implementation-defined server error ACP agents
	// answer a failed prompt with (spec P16).
	CodeServer = -32000
)

// MaxDepth is the deepest nesting of arrays and objects a frame may have.
const MaxDepth = 128

// Error is a JSON-RPC error object: what a handler answers with, and what a
// Call returns when the peer answered with one.
type Error struct {
	Number  int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the message with its code.
func (e *Error) Error() string { return fmt.Sprintf("%s (json-rpc %d)", e.Message, e.Number) }

// Code returns the error's stable machine code.
func (e *Error) Code() string { return "jsonrpc_error" }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Number: code, Message: fmt.Sprintf(format, args...)}
}

// Message is one decoded frame. A request has Method and ID, a notification
// Method and no ID, a response ID and Result or Error.
type Message struct {
	ID     json.RawMessage // nil when absent; the raw id otherwise
	Method string
	Params json.RawMessage // nil when absent
	Result json.RawMessage
	Error  *Error
}

// IsRequest reports whether m expects a reply.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m answers a request.
func (m *Message) IsResponse() bool { return m.Method == "" && m.ID != nil }

// errDrop marks a line that is dropped without an answer.
var errDrop = errors.New("dropped")

// Decode parses one frame. It refuses, without answering, what is not a
// JSON object (or nests deeper than MaxDepth); a frame whose shape is wrong
// but whose id can be read returns that id with an *Error to answer it
// with.
func Decode(line []byte) (*Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", errDrop)
	}
	if d := depth(line); d > MaxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d levels", errDrop, MaxDepth)
	}
	var raw struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", errDrop, err)
	}
	m := &Message{Params: raw.Params, Result: raw.Result}
	if len(raw.ID) > 0 && !bytes.Equal(raw.ID, []byte("null")) {
		if raw.ID[0] != '"' && (raw.ID[0] < '0' || raw.ID[0] > '9') && raw.ID[0] != '-' {
			return nil, fmt.Errorf("%w: the id is neither a string nor a number", errDrop)
		}
		m.ID = raw.ID
	}
	if len(raw.Method) > 0 {
		if err := json.Unmarshal(raw.Method, &m.Method); err != nil || m.Method == "" {
			return m, Errorf(CodeInvalidRequest, "method must be a non-empty string")
		}
	}
	if raw.JSONRPC == nil || *raw.JSONRPC != "2.0" {
		return m, Errorf(CodeInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if len(raw.Error) > 0 && !bytes.Equal(raw.Error, []byte("null")) {
		var e Error
		if err := json.Unmarshal(raw.Error, &e); err != nil {
			e = Error{Number: CodeInternal, Message: "the peer answered with an error that is not a JSON-RPC error object"}
		}
		m.Error = &e
	}
	if m.Method == "" && m.ID == nil {
		return m, Errorf(CodeInvalidRequest, "a frame needs a method or an id")
	}
	return m, nil
}

// depth returns the deepest nesting of arrays and objects in b, outside
// strings; it stops counting once past MaxDepth.
func depth(b []byte) int {
	d, max := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			d++
			if d > max {
				max = d
				if max > MaxDepth {
					return max
				}
			}
		case c == ']' || c == '}':
			d--
		}
	}
	return max
}

type outRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type outNotification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type outResult struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

type outError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *Error          `json:"error"`
}
