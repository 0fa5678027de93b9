package ollama

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"
	"time"

	"github.com/prism-local/prism/errcode"
)

// ChatRequest is one POST /api/chat. It is always streamed.
type ChatRequest struct {
	// Model is Ollama's name for the model ("llama3.2:3b").
	Model    string
	Messages []Message
	// Tools are function tools in OpenAI's shape ({"type": "function",
	// "function": {"name", "description", "parameters"}}), which Ollama
	// takes as it is.
	Tools []json.RawMessage
	// Format is "json" (JSON mode, as a JSON string) or a JSON Schema
	// object; nil for free text.
	Format json.RawMessage
	// Options are the sampling options; unset fields keep the model's.
	Options Options
	// Think asks a thinking model to think or not; ThinkDefault leaves it
	// to the model.
	Think Think
}

// Think is the request's "think" field.
type Think string

// The values of Think. Levels are for models that have them (gpt-oss).
const (
	ThinkDefault Think = ""
	ThinkOn      Think = "true"
	ThinkOff     Think = "false"
	ThinkLow     Think = "low"
	ThinkMedium  Think = "medium"
	ThinkHigh    Think = "high"
)

func (t Think) raw() json.RawMessage {
	switch t {
	case ThinkDefault:
		return nil
	case ThinkOn, ThinkOff:
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(string(t))
	return b
}

// Options are the model options of a request; nil fields are not sent.
type Options struct {
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"top_p,omitempty"`
	TopK             *int     `json:"top_k,omitempty"`
	MinP             *float64 `json:"min_p,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	NumPredict       *int     `json:"num_predict,omitempty"`
	Stop             []string `json:"stop,omitempty"`
	RepeatPenalty    *float64 `json:"repeat_penalty,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
}

func (o Options) zero() bool {
	return o.Temperature == nil && o.TopP == nil && o.TopK == nil && o.MinP == nil && o.Seed == nil &&
		o.NumPredict == nil && len(o.Stop) == 0 && o.RepeatPenalty == nil && o.PresencePenalty == nil &&
		o.FrequencyPenalty == nil
}

// Message is one chat message, in a request or an answer. Images are not
// carried: the server refuses image parts before a request gets here.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolName names the tool a "tool" message answers.
	ToolName string `json:"tool_name,omitempty"`
}

// ToolCall is a whole tool call, as Ollama sends and accepts them.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a ToolCall's function.
type FunctionCall struct {
	Index int    `json:"index,omitempty"`
	Name  string `json:"name"`
	// Arguments is a JSON object (not a string holding one, as in
	// OpenAI's API).
	Arguments json.RawMessage `json:"arguments"`
}

type chatBody struct {
	Model    string            `json:"model"`
	Messages []Message         `json:"messages"`
	Tools    []json.RawMessage `json:"tools,omitempty"`
	Format   json.RawMessage   `json:"format,omitempty"`
	Options  *Options          `json:"options,omitempty"`
	Think    json.RawMessage   `json:"think,omitempty"`
	Stream   bool              `json:"stream"`
}

// chunk is one line of a /api/chat stream.
type chunk struct {
	Model              string   `json:"model"`
	Message            *Message `json:"message"`
	Done               bool     `json:"done"`
	DoneReason         string   `json:"done_reason"`
	PromptEvalCount    int      `json:"prompt_eval_count"`
	EvalCount          int      `json:"eval_count"`
	TotalDuration      int64    `json:"total_duration"`
	LoadDuration       int64    `json:"load_duration"`
	PromptEvalDuration int64    `json:"prompt_eval_duration"`
	EvalDuration       int64    `json:"eval_duration"`
	Error              *string  `json:"error"`
}

// Chunk is the new part of the answer one stream line carries.
type Chunk struct {
	Thinking  string
	Content   string
	ToolCalls []ToolCall
}

// Result is what the final chunk reports.
type Result struct {
	// DoneReason is Ollama's: "stop" (the model ended or a stop string
	// matched), "length" (num_predict or the context window), or another
	// word a newer Ollama gives.
	DoneReason string
	// PromptTokens is prompt_eval_count: the prompt tokens Ollama
	// evaluated (it leaves out what its own cache reused).
	PromptTokens int
	// CompletionTokens is eval_count.
	CompletionTokens int
	// Load, PromptEval and Eval are the durations Ollama measured.
	Load, PromptEval, Eval time.Duration
}

// ChatStream is a streamed answer. Next, Chunk and Err are used by one
// goroutine; Close may be called from any and ends the stream at once.
type ChatStream struct {
	ctx   context.Context
	stop  context.CancelFunc
	body  io.ReadCloser
	dec   *lineDecoder
	first *chunk
	cur   Chunk
	res   Result
	done  bool
	err   error
	// closed is set by Close, which may run on another goroutine.
	closed atomic.Bool
}

// Chat sends req and returns the stream once its first chunk has arrived,
// so that a failure before the answer begins (Ollama unreachable, unknown
// model, a refused request, an error line first) is Chat's error.
// Cancelling ctx or calling Close ends the stream at once.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*ChatStream, error) {
	body := chatBody{Model: req.Model, Messages: req.Messages, Tools: req.Tools, Format: req.Format,
		Think: req.Think.raw(), Stream: true}
	if o := req.Options; !o.zero() {
		body.Options = &o
	}
	if body.Messages == nil {
		body.Messages = []Message{}
	}
	ctx, stop := context.WithCancel(ctx)
	resp, err := c.do(ctx, "chat", "POST", "/api/chat", body)
	if err != nil {
		stop()
		return nil, err
	}
	s := &ChatStream{ctx: ctx, stop: stop, body: resp.Body, dec: newLineDecoder(resp.Body, maxLine)}
	var first chunk
	if err := s.read(&first); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.first = &first
	return s, nil
}

// read decodes the next line and checks it.
func (s *ChatStream) read(c *chunk) error {
	if err := s.dec.next(c); err != nil {
		return streamError(s.ctx, "chat", err)
	}
	if c.Error != nil {
		// An error line is Ollama failing while it answers.
		return &Error{ErrCode: errcode.BackendUnavailable, Op: "chat", Message: *c.Error}
	}
	if c.Message == nil && !c.Done {
		return unavailable("chat", "a chunk without a message", nil)
	}
	if c.Message != nil {
		for _, tc := range c.Message.ToolCalls {
			if tc.Function.Name == "" || !isObject(tc.Function.Arguments) {
				return unavailable("chat", "a tool call without a name or an arguments object", nil)
			}
		}
	}
	return nil
}

// Next advances to the next chunk. It returns false at the end of the
// answer, after a failure (see Err) or once the stream is closed.
func (s *ChatStream) Next() bool {
	if s.done || s.err != nil {
		return false
	}
	var c chunk
	if s.first != nil {
		c, s.first = *s.first, nil
	} else if err := s.read(&c); err != nil {
		if !s.closed.Load() {
			s.err = err
		}
		s.release()
		return false
	}
	if c.Done {
		s.done = true
		s.res = Result{DoneReason: c.DoneReason, PromptTokens: c.PromptEvalCount, CompletionTokens: c.EvalCount,
			Load: time.Duration(c.LoadDuration), PromptEval: time.Duration(c.PromptEvalDuration), Eval: time.Duration(c.EvalDuration)}
		s.release()
	}
	s.cur = Chunk{}
	if c.Message != nil {
		s.cur = Chunk{Thinking: c.Message.Thinking, Content: c.Message.Content, ToolCalls: c.Message.ToolCalls}
	}
	return true
}

// Chunk returns the current chunk (valid until the next call to Next).
func (s *ChatStream) Chunk() Chunk { return s.cur }

// Err returns the failure that ended the stream, nil after a complete
// answer or a Close.
func (s *ChatStream) Err() error { return s.err }

// Done reports whether the final chunk arrived.
func (s *ChatStream) Done() bool { return s.done }

// Result returns what the final chunk reported (zero before it arrived).
func (s *ChatStream) Result() Result { return s.res }

// Close ends the stream and releases the connection; it is idempotent.
func (s *ChatStream) Close() error {
	s.closed.Store(true)
	s.release()
	return nil
}

func (s *ChatStream) release() {
	s.stop()
	_ = s.body.Close()
}

func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b == '{'
	}
	return false
}
