package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prism-local/prism/internal/app/wire"
)

// maxErrorBody caps how much of an error response is read.
const maxErrorBody = 64 << 10

// Message is one chat message as the API takes it.
type Message struct {
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolCalls  []wire.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ChatRequest is a streamed chat completion request.
type ChatRequest struct {
	// Model names the model; "" is filled by the Backend with its default.
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	// MaxTokens caps the answer; nil leaves the server's default.
	MaxTokens *int `json:"max_tokens,omitempty"`
	// Temperature nil leaves the model's default.
	Temperature *float64 `json:"temperature,omitempty"`
	// ResponseFormat is the raw response_format object, nil for none.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Tools and ToolChoice are passed through as the API takes them.
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
}

// Delta is what one streamed chunk adds.
type Delta struct {
	Content   string
	Reasoning string
	ToolCalls []wire.ToolCallDelta
}

// Result is a finished generation.
type Result struct {
	// Model is the model that answered, as the server names it.
	Model        string
	Text         string
	Reasoning    string
	ToolCalls    []wire.ToolCall
	FinishReason string
	Usage        wire.Usage
	// Backend says where the answer came from: "server" or "in-process".
	Backend string
	// Warnings lists what was done instead of what was asked (a fallback).
	Warnings []string
}

// APIError is an error answer of the API: its HTTP status and the body's
// error object. Code returns error.code, so errcode.Of finds it. An
// in-process answer's has no Status and keeps its cause in Err.
type APIError struct {
	Status  int
	Type    string
	ErrCode string
	Message string
	Param   string
	Err     error
}

// Unwrap returns the in-process cause, nil for an answer of the server.
func (e *APIError) Unwrap() error { return e.Err }

func (e *APIError) Error() string {
	s := e.Message
	if e.ErrCode != "" {
		s = e.ErrCode + ": " + s
	}
	if e.Param != "" {
		s += " (param " + e.Param + ")"
	}
	return s
}

// Code returns the API's error code.
func (e *APIError) Code() string { return e.ErrCode }

// Client talks to one OpenAI-compatible API root (".../v1").
type Client struct {
	base   string
	apiKey string
	http   *http.Client
}

// NewClient returns a client of the API at base (e.g.
// "http://127.0.0.1:8080/v1"); key, when set, is sent as a bearer token.
// A nil hc is http.DefaultClient.
func NewClient(base, key string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(base, "/"), apiKey: key, http: hc}
}

// BaseURL returns the API root.
func (c *Client) BaseURL() string { return c.base }

func (c *Client) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

func readAPIError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Param   string `json:"param"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) != nil || body.Error == nil {
		return &APIError{Status: resp.StatusCode, Message: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, clip(string(data)))}
	}
	e := &APIError{Status: resp.StatusCode, Type: body.Error.Type, Message: body.Error.Message, Param: body.Error.Param}
	if s, ok := body.Error.Code.(string); ok {
		e.ErrCode = s
	}
	return e
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v)
}

// Model is one entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by,omitempty"`
}

// Models lists the models the server can serve.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	var list struct {
		Data []Model `json:"data"`
	}
	if err := c.getJSON(ctx, "/models", &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// Health reads the server's health; /health sits beside /v1.
func (c *Client) Health(ctx context.Context) (wire.Health, error) {
	var h wire.Health
	base := c.base
	c2 := *c
	c2.base = strings.TrimSuffix(base, "/v1")
	err := c2.getJSON(ctx, "/health", &h)
	return h, err
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireRequest struct {
	ChatRequest
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
}

// Chat streams a chat completion, calling onDelta for every chunk that
// adds text, reasoning or a tool-call fragment, and returns the whole
// answer. Cancelling ctx stops the generation on the server (the request
// is dropped). An onDelta error stops the stream and is returned.
func (c *Client) Chat(ctx context.Context, req ChatRequest, onDelta func(Delta) error) (*Result, error) {
	resp, err := c.request(ctx, http.MethodPost, "/chat/completions",
		wireRequest{ChatRequest: req, Stream: true, StreamOptions: streamOptions{IncludeUsage: true}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	res := &Result{Model: req.Model}
	var text, reasoning strings.Builder
	calls := map[int]*wire.ToolCall{}
	err = readEvents(resp.Body, func(data []byte) error {
		var chunk struct {
			wire.ChatChunk
			Error *json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return fmt.Errorf("backend: undecodable stream chunk: %w", err)
		}
		if chunk.Error != nil {
			return streamError(*chunk.Error)
		}
		if chunk.Model != "" {
			res.Model = chunk.Model
		}
		if chunk.Usage != nil {
			res.Usage = *chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if ch.FinishReason != nil {
				res.FinishReason = *ch.FinishReason
			}
			d := Delta{ToolCalls: ch.Delta.ToolCalls}
			if ch.Delta.Content != nil {
				d.Content = *ch.Delta.Content
			}
			if ch.Delta.ReasoningContent != nil {
				d.Reasoning = *ch.Delta.ReasoningContent
			} else if ch.Delta.Reasoning != nil {
				d.Reasoning = *ch.Delta.Reasoning
			}
			text.WriteString(d.Content)
			reasoning.WriteString(d.Reasoning)
			mergeToolCalls(calls, d.ToolCalls)
			if d.Content == "" && d.Reasoning == "" && len(d.ToolCalls) == 0 {
				continue
			}
			if onDelta != nil {
				if err := onDelta(d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	res.Text, res.Reasoning = text.String(), reasoning.String()
	for i := 0; i < len(calls); i++ {
		if tc, ok := calls[i]; ok {
			res.ToolCalls = append(res.ToolCalls, *tc)
		}
	}
	return res, nil
}

func streamError(raw json.RawMessage) error {
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Param   string `json:"param"`
	}
	_ = json.Unmarshal(raw, &e)
	ae := &APIError{Status: http.StatusOK, Type: e.Type, Message: e.Message, Param: e.Param}
	if s, ok := e.Code.(string); ok {
		ae.ErrCode = s
	}
	if ae.Message == "" {
		ae.Message = "the stream ended with an error: " + clip(string(raw))
	}
	return ae
}

func mergeToolCalls(calls map[int]*wire.ToolCall, deltas []wire.ToolCallDelta) {
	for _, d := range deltas {
		tc, ok := calls[d.Index]
		if !ok {
			tc = &wire.ToolCall{Type: "function"}
			calls[d.Index] = tc
		}
		if d.ID != "" {
			tc.ID = d.ID
		}
		if d.Function != nil {
			if d.Function.Name != "" {
				tc.Function.Name = d.Function.Name
			}
			tc.Function.Arguments += d.Function.Arguments
		}
	}
}

// errStreamEnd ends readEvents at "data: [DONE]".
var errStreamEnd = errors.New("stream end")

// readEvents calls fn with the data of every server-sent event until
// [DONE]; the end of the body before it is errCut.
func readEvents(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var data []byte
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		d := data
		data = nil
		if string(bytes.TrimSpace(d)) == "[DONE]" {
			return errStreamEnd
		}
		return fn(d)
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if err := flush(); err != nil {
				return ignoreEnd(err)
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return ignoreEnd(err)
	}
	// A stream the server finished ends with [DONE]; one that stops before
	// it was cut (the server shut down, or the request was cancelled).
	return errCut
}

// errCut is a stream that ended before its [DONE].
var errCut = errors.New("the answer stream ended before [DONE]: it was cut")

func ignoreEnd(err error) error {
	if errors.Is(err, errStreamEnd) {
		return nil
	}
	return err
}
