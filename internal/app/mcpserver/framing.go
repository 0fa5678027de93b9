package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// JSON-RPC error codes the framing guard answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
)

// maxLine bounds one inbound message; longer lines are refused whole.
const maxLine = 16 << 20

// guardStdio sits between the client's stream and the SDK: the SDK ends
// the session on a line that is not a JSON-RPC object, so such lines are
// answered here (-32700 for malformed JSON, -32600 for other values, with
// the request's id where it has a usable one) and only well-formed messages
// reach the SDK. out is shared with the SDK, one whole message per write.
func guardStdio(in io.Reader, out io.Writer) (io.ReadCloser, io.WriteCloser, func()) {
	lw := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() {
		// Ends when in does, or at the first line after the SDK stopped
		// reading; a read blocked on a client that never closes stdin is
		// left behind, as the process is about to exit.
		err := filterLines(in, pw, lw)
		pw.CloseWithError(err)
	}()
	return pr, lw, func() { pr.Close() }
}

// filterLines copies the acceptable lines of in to dst and answers the
// others on reply, until in ends or dst is closed.
func filterLines(in io.Reader, dst io.Writer, reply io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if len(line) > 0 || tooLong {
			var answer []byte
			if tooLong {
				answer = errorResponse(nil, codeParseError, "parse error: the message is longer than 16 MiB")
			} else {
				answer = check(line)
			}
			if answer != nil {
				if _, werr := reply.Write(answer); werr != nil {
					return werr
				}
			} else if _, werr := dst.Write(append(line, '\n')); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readLine reads one line without its newline; a line over maxLine is
// consumed and reported as tooLong.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(line), tooLong, err
	}
}

// check returns the error answer for a line the SDK must not see, or nil
// for a well-formed JSON-RPC message. Notifications (no id) with a bad
// shape are dropped silently, as JSON-RPC has no way to answer them.
func check(line []byte) []byte {
	if !json.Valid(line) {
		var syn *json.SyntaxError
		msg := "parse error: the line is not JSON"
		if err := json.Unmarshal(line, new(any)); errors.As(err, &syn) {
			msg = "parse error: " + syn.Error()
		}
		return errorResponse(nil, codeParseError, msg)
	}
	if line[0] != '{' {
		return errorResponse(nil, codeInvalidRequest, "invalid request: want a JSON-RPC object (batches are not supported)")
	}
	var m struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return errorResponse(nil, codeInvalidRequest, "invalid request: "+err.Error())
	}
	id := usableID(m.ID)
	switch {
	case m.ID != nil && id == nil:
		return errorResponse(nil, codeInvalidRequest, "invalid request: id must be a string or a number")
	case string(m.JSONRPC) != `"2.0"`:
		return answerRequest(id, codeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	case m.Method == nil && m.Result == nil && m.Error == nil:
		return answerRequest(id, codeInvalidRequest, "invalid request: no method")
	case m.Method != nil && m.Method[0] != '"':
		return answerRequest(id, codeInvalidRequest, "invalid request: method must be a string")
	case m.Method != nil && m.Params != nil && m.Params[0] != '{' && string(m.Params) != "null":
		return answerRequest(id, codeInvalidParams, "invalid params: params must be an object")
	case m.Method == nil && id == nil:
		return []byte{} // a response without an id answers nothing we sent: drop it
	}
	return nil
}

// answerRequest answers a request, or drops a bad notification (no id).
func answerRequest(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		return []byte{}
	}
	return errorResponse(id, code, msg)
}

// usableID returns raw when it is a JSON string or number, else nil.
func usableID(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return raw
	}
	return nil
}

func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return append(b, '\n')
}

// lockedWriter serialises whole-message writes of the SDK and the guard.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close closes the underlying writer when it can be closed.
func (l *lockedWriter) Close() error {
	if c, ok := l.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
