package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/prism-local/prism/errcode"
)

// DefaultURL is where Ollama listens unless told otherwise.
const DefaultURL = "http://127.0.0.1:11434"

// maxBody bounds a whole (non-streamed) answer: a model list or a batch
// of embeddings.
const maxBody = 64 << 20

// Client talks to one Ollama daemon. It is safe for concurrent use.
type Client struct {
	base *url.URL
	http *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: http.DefaultClient). Give
// it no overall Timeout: a streamed chat lasts as long as the answer, and
// cancellation comes from each call's context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// New returns a client for the daemon at baseURL ("" for DefaultURL).
func New(baseURL string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		baseURL = DefaultURL
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &Error{ErrCode: errcode.InvalidSetting, Op: "connect", Message: fmt.Sprintf("the base URL %q is not an http or https URL", baseURL)}
	}
	c := &Client{base: u, http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// URL returns the daemon's base URL.
func (c *Client) URL() string { return c.base.String() }

// do sends a request and returns the response of a 2xx answer; any other
// answer, and any failure to get one, is an *Error.
func (c *Client) do(ctx context.Context, op, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, &Error{ErrCode: errcode.InvalidRequest, Op: op, Message: "encode the request", Err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return nil, unavailable(op, "build the request", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/x-ndjson")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ollama %s: %w", op, ctx.Err())
		}
		return nil, unavailable(op, "Ollama is not reachable at "+c.base.String()+" (is `ollama serve` running?)", err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, statusError(op, resp)
}

// statusError reads Ollama's {"error": "..."} body and maps the status to
// a code.
func statusError(op string, resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &body) == nil && body.Error != "" {
		msg = body.Error
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e := &Error{Op: op, Status: resp.StatusCode, Message: msg}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		e.ErrCode = errcode.ModelNotFound
	case resp.StatusCode/100 == 4 && strings.Contains(msg, "does not support tools"):
		e.ErrCode = errcode.ToolsNotSupported
	case resp.StatusCode/100 == 4:
		e.ErrCode = errcode.InvalidRequest
	default:
		e.ErrCode = errcode.BackendUnavailable
	}
	return e
}

// decodeWhole reads a whole JSON answer into v, strictly: one object and
// nothing after it.
func decodeWhole(op string, resp *http.Response, v any) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return unavailable(op, "read the answer", err)
	}
	if len(b) > maxBody {
		return unavailable(op, "the answer is larger than 64 MiB", nil)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return unavailable(op, "the answer is not what Ollama's API defines", err)
	}
	return nil
}

// streamError turns a failure while reading a stream into an *Error (or the
// context's error when the caller gave up).
func streamError(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("ollama %s: %w", op, ctx.Err())
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return unavailable(op, "the stream ended before its final chunk", err)
	case errors.Is(err, errLineTooLong), errors.Is(err, errNotObject):
		return unavailable(op, "the stream is not NDJSON as Ollama's API defines it", err)
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return unavailable(op, "the stream is not NDJSON as Ollama's API defines it", err)
	}
	return unavailable(op, "the stream broke off", err)
}
