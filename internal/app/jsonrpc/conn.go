package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
)

// MaxLine is the longest frame Serve reads (a file's text travels in one).
const MaxLine = 64 << 20

// ErrClosed is what a pending Call fails with when the input ends before
// the peer replied, and what a Call started after that fails with.
var ErrClosed = errors.New("the connection closed before the client replied")

// Handler receives the requests and notifications of a Conn, one at a time
// in arrival order, on Serve's goroutine. It must not block for long: work
// that waits (a generation, a Call) belongs on a goroutine of its own.
type Handler func(ctx context.Context, m *Message)

// Conn is one JSON-RPC connection over a line-delimited stream pair.
type Conn struct {
	in  io.Reader
	log *slog.Logger

	wmu    sync.Mutex // one frame at a time, never interleaved
	out    io.Writer
	broken error // the first write error; later writes are dropped

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan *Message
	closed  bool
}

// NewConn returns a Conn reading frames from in and writing them to out.
func NewConn(in io.Reader, out io.Writer, log *slog.Logger) *Conn {
	if log == nil {
		log = slog.Default()
	}
	return &Conn{in: in, out: out, log: log, pending: map[int64]chan *Message{}}
}

// Serve reads frames until the input ends or ctx is done, answering frames
// that cannot be handled and passing the others to h. When it returns every
// pending Call has failed with ErrClosed. The error is nil at the end of
// the input.
func (c *Conn) Serve(ctx context.Context, h Handler) error {
	defer c.closePending()
	r := bufio.NewReaderSize(c.in, 64<<10)
	for ctx.Err() == nil {
		line, err := readLine(r)
		if len(line) > 0 {
			c.frame(ctx, line, h)
		}
		if errors.Is(err, errTooLong) {
			c.log.Warn("dropped a frame longer than the limit", "limit_bytes", MaxLine)
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	return ctx.Err()
}

var errTooLong = errors.New("line too long")

// readLine reads one line without its newline; a line over MaxLine is
// skipped to its end and reported as errTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, errTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			line = line[:len(line)-1]
		}
		return line, err
	}
}

// frame handles one line; a panic in the handler answers -32603 and the
// connection goes on.
func (c *Conn) frame(ctx context.Context, line []byte, h Handler) {
	m, err := Decode(line)
	if errors.Is(err, errDrop) {
		c.log.Warn("dropped a malformed frame", "reason", err.Error())
		return
	}
	var rpcErr *Error
	if errors.As(err, &rpcErr) {
		if m != nil && m.ID != nil && m.Method != "" || m != nil && m.ID != nil && m.Result == nil && m.Error == nil {
			c.ReplyError(m.ID, rpcErr)
		} else {
			c.log.Warn("dropped an invalid frame", "reason", rpcErr.Message)
		}
		return
	}
	if m.IsResponse() {
		c.deliver(m)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", "method", m.Method, "panic", fmt.Sprint(p))
			if m.IsRequest() {
				c.ReplyError(m.ID, Errorf(CodeInternal, "internal error handling %s", m.Method))
			}
		}
	}()
	h(ctx, m)
}

func (c *Conn) deliver(m *Message) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if err != nil || !ok {
		c.log.Warn("dropped a response to no pending request", "id", string(m.ID))
		return
	}
	ch <- m
}

func (c *Conn) closePending() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// Call sends a request and waits for its reply: the result, an *Error the
// peer answered with, ErrClosed, or ctx's error (the reply, if it comes, is
// then dropped).
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan *Message, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, ErrClosed)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(outRequest{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: %w", method, ErrClosed)
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Pending returns how many Calls wait for a reply.
func (c *Conn) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	return c.write(outNotification{JSONRPC: "2.0", Method: method, Params: params})
}

// Reply answers request id with result.
func (c *Conn) Reply(id json.RawMessage, result any) error {
	return c.write(outResult{JSONRPC: "2.0", ID: id, Result: result})
}

// ReplyError answers request id with an error.
func (c *Conn) ReplyError(id json.RawMessage, e *Error) error {
	return c.write(outError{JSONRPC: "2.0", ID: id, Error: e})
}

// ErrBroken wraps the first write error; every later write returns it.
var ErrBroken = errors.New("the output is closed")

// write sends one frame. A write error is logged once and sticks: the
// frame and every later one are dropped, never a panic (spec P16).
func (c *Conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	if _, err := c.out.Write(b); err != nil {
		c.broken = fmt.Errorf("%w: %v", ErrBroken, err)
		c.log.Warn("output closed: dropping this and every later frame", "err", err)
		return c.broken
	}
	return nil
}
