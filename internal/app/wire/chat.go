package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`

	// Tools are the function tools offered; each keeps the JSON it was
	// sent as (Tool.Raw), key order included, for the chat template.
	Tools []Tool `json:"tools"`
	// ToolChoice is the raw tool_choice; the tools package parses and
	// applies it (spec P14), so its shapes are defined in one place.
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	// AllowRepeatedCalls is Prism's: an answer goes on after a tool call
	// that repeats an earlier one (name and arguments) instead of ending
	// there.
	AllowRepeatedCalls bool `json:"allow_repeated_calls"`

	ResponseFormat *ResponseFormat `json:"response_format"`
	// MaxTokens and MaxCompletionTokens are the same limit under its old
	// and new names; Limit reads them.
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`

	Sampling

	Logprobs    bool `json:"logprobs"`
	TopLogprobs *int `json:"top_logprobs"`

	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options"`

	// ReasoningEffort and ChatTemplateKwargs reach the chat template
	// (reasoning_effort, and variables such as enable_thinking).
	ReasoningEffort    string          `json:"reasoning_effort"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs"`

	// N is the number of choices; only 1 is served.
	N *int `json:"n"`
	// Modalities may only be ["text"]: the models served produce text.
	Modalities []string `json:"modalities"`

	// Accepted and not used: they do not change the answer.
	User             string          `json:"user"`
	Metadata         json.RawMessage `json:"metadata"`
	Store            *bool           `json:"store"`
	ServiceTier      string          `json:"service_tier"`
	PromptCacheKey   string          `json:"prompt_cache_key"`
	SafetyIdentifier string          `json:"safety_identifier"`
	Verbosity        string          `json:"verbosity"`

	LogitBias        Refused `json:"logit_bias" why:"token biases are not applied by this server"`
	Audio            Refused `json:"audio" why:"the models served produce text only"`
	Prediction       Refused `json:"prediction" why:"predicted outputs are not implemented"`
	WebSearchOptions Refused `json:"web_search_options" why:"this server does not search the web"`
	Functions        Refused `json:"functions" why:"use tools; the deprecated functions parameter is not served"`
	FunctionCall     Refused `json:"function_call" why:"use tool_choice; the deprecated function_call parameter is not served"`
}

// Sampling holds the sampling parameters chat and text completions share.
// Their ranges are the engine's to check (its InvalidRequestError names
// the same parameters).
type Sampling struct {
	Temperature      *float64 `json:"temperature"`
	TopP             *float64 `json:"top_p"`
	Seed             *int64   `json:"seed"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	// TopK, MinP and RepetitionPenalty are not OpenAI's; llama.cpp and vLLM
	// accept them under these names and the engine honours them.
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	Stop              Stop     `json:"stop"`
	// Speculation false turns speculative decoding off for the request
	// (a Prism extension; the tokens do not change, only the speed).
	Speculation *bool `json:"speculation"`
}

// Message is one message of a chat request.
type Message struct {
	// Role is system, developer, user, assistant or tool.
	Role    string  `json:"role"`
	Content Content `json:"content"`
	Name    string  `json:"name"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id"`
	// ReasoningContent and Reasoning are the assistant's earlier thinking
	// under the two names clients use; Thinking reads them.
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
	Refusal          *string `json:"refusal"`
}

func (*Message) tolerant() {}

// Thinking returns the message's reasoning, from reasoning_content or else
// reasoning; nil when it has none.
func (m *Message) Thinking() *string {
	if m.ReasoningContent != nil {
		return m.ReasoningContent
	}
	return m.Reasoning
}

// ContentPart is one part of a list content.
type ContentPart struct {
	// Type is text (or refusal on an assistant message); image_url,
	// input_audio and file are refused: the models served read text.
	Type       string          `json:"type"`
	Text       *string         `json:"text,omitempty"`
	Refusal    *string         `json:"refusal,omitempty"`
	ImageURL   json.RawMessage `json:"image_url,omitempty"`
	InputAudio json.RawMessage `json:"input_audio,omitempty"`
	File       json.RawMessage `json:"file,omitempty"`
}

func (*ContentPart) tolerant() {}

// ToolCall is a call an assistant message made, in a request or a
// response.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

func (*ToolCall) tolerant() {} // streamed calls echoed back carry an index

// FunctionCall names the function a ToolCall calls and its arguments.
type FunctionCall struct {
	Name string `json:"name"`
	// Arguments is the arguments' JSON text, as OpenAI sends it: a string
	// holding a JSON object.
	Arguments string `json:"arguments"`
}

func (*FunctionCall) tolerant() {}

// Tool is one tool definition of a request.
type Tool struct {
	Type     string       `json:"type"`
	Function *FunctionDef `json:"function"`
	// Raw is the tool exactly as it was sent.
	Raw json.RawMessage `json:"-"`
}

func (t *Tool) decodeWire(raw []byte, path string) *Error {
	type plain Tool // the same fields without this method
	var p plain
	if err := decodeInto(raw, &p, path); err != nil {
		return err
	}
	*t = Tool(p)
	t.Raw = bytes.Clone(raw)
	return nil
}

// MarshalJSON writes the tool as it was sent.
func (t Tool) MarshalJSON() ([]byte, error) {
	if t.Raw != nil {
		return t.Raw, nil
	}
	type plain Tool
	return json.Marshal(plain(t))
}

// FunctionDef is a function tool's definition.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponseFormat is response_format: text, json_object or json_schema.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema"`
}

// JSONSchema is the json_schema of a response format.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// StreamOptions is stream_options.
type StreamOptions struct {
	// IncludeUsage asks for a last chunk with empty choices and the usage.
	IncludeUsage bool `json:"include_usage"`
	// IncludeObfuscation is accepted and not used: no obfuscation field is
	// sent.
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

// DecodeChat decodes and validates a chat completion request body.
func DecodeChat(body []byte) (*ChatRequest, error) {
	return decodeRequest[ChatRequest](body)
}

// request is a request body type: decoded, then validated.
type request[T any] interface {
	*T
	validate() error
}

func decodeRequest[T any, P request[T]](body []byte) (*T, error) {
	var req T
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if err := P(&req).validate(); err != nil {
		return nil, err
	}
	return &req, nil
}

// Limit returns the completion token limit: max_completion_tokens, else
// max_tokens; 0 when neither is set.
func (r *ChatRequest) Limit() int {
	if r.MaxCompletionTokens != nil {
		return *r.MaxCompletionTokens
	}
	if r.MaxTokens != nil {
		return *r.MaxTokens
	}
	return 0
}

// IncludeUsage reports whether a stream ends with a usage chunk.
func (r *ChatRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// RawTools returns the tools as sent, for the tools and templates packages.
func (r *ChatRequest) RawTools() []json.RawMessage {
	if r.Tools == nil {
		return nil
	}
	out := make([]json.RawMessage, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t.Raw
	}
	return out
}

// TemplateKwargs returns chat_template_kwargs as variables for the chat
// template, each value as its raw JSON; nil when none were sent.
func (r *ChatRequest) TemplateKwargs() map[string]json.RawMessage {
	if len(r.ChatTemplateKwargs) == 0 || string(r.ChatTemplateKwargs) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(r.ChatTemplateKwargs, &m) // validated as an object
	return m
}

func (r *ChatRequest) validate() error {
	if r.Model == "" {
		return invalid("model", "model is required")
	}
	if len(r.Messages) == 0 {
		return invalid("messages", "messages must hold at least one message")
	}
	for i := range r.Messages {
		if err := r.Messages[i].validate("messages[" + strconv.Itoa(i) + "]"); err != nil {
			return err
		}
	}
	if err := validateTools(r.Tools, "tools"); err != nil {
		return err
	}
	if err := r.ResponseFormat.validate("response_format"); err != nil {
		return err
	}
	if err := validateLimits(r.MaxTokens, r.MaxCompletionTokens); err != nil {
		return err
	}
	if r.N != nil && *r.N != 1 {
		if *r.N < 1 {
			return invalid("n", "n must be at least 1, got %d", *r.N)
		}
		return unsupported("n", "n = %d is not supported: this server returns one choice per request", *r.N)
	}
	for i, m := range r.Modalities {
		if m != "text" {
			at := fmt.Sprintf("modalities[%d]", i)
			return unsupported(at, "%s: %q output is not supported: the models served produce text only", at, m)
		}
	}
	if r.TopLogprobs != nil {
		if *r.TopLogprobs < 0 || *r.TopLogprobs > 20 {
			return invalid("top_logprobs", "top_logprobs must be between 0 and 20, got %d", *r.TopLogprobs)
		}
		if !r.Logprobs && *r.TopLogprobs > 0 {
			return invalid("top_logprobs", "top_logprobs needs logprobs: true")
		}
	}
	if r.StreamOptions != nil && !r.Stream {
		return invalid("stream_options", "stream_options is only allowed with stream: true")
	}
	if err := validateObject(r.ChatTemplateKwargs, "chat_template_kwargs"); err != nil {
		return err
	}
	return validateEffort(r.ReasoningEffort, "reasoning_effort")
}

// ReasoningEfforts are the values of reasoning_effort.
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

func validateEffort(effort, path string) error {
	if effort == "" {
		return nil
	}
	for _, e := range reasoningEfforts {
		if effort == e {
			return nil
		}
	}
	return invalid(path, "%s must be one of none, minimal, low, medium, high, xhigh; got %q", path, effort)
}

func validateLimits(maxTokens, maxCompletion *int) error {
	for _, l := range []struct {
		name string
		v    *int
	}{{"max_tokens", maxTokens}, {"max_completion_tokens", maxCompletion}} {
		if l.v != nil && *l.v < 1 {
			return invalid(l.name, "%s must be at least 1, got %d", l.name, *l.v)
		}
	}
	if maxTokens != nil && maxCompletion != nil && *maxTokens != *maxCompletion {
		return invalid("max_tokens", "max_tokens (%d) and max_completion_tokens (%d) disagree; send one of them", *maxTokens, *maxCompletion)
	}
	return nil
}

func validateObject(raw json.RawMessage, path string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || raw[0] == '{' {
		return nil
	}
	return invalid(path, "%s: want an object, got %s", path, kindOf(raw))
}

var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

func (m *Message) validate(path string) error {
	switch {
	case m.Role == "":
		return invalid(path+".role", "%s.role is required", path)
	case m.Role == "function":
		return unsupported(path+".role", `%s.role "function" is the deprecated form of "tool", which this server does not serve`, path)
	case !roles[m.Role]:
		return invalid(path+".role", "%s.role must be system, developer, user, assistant or tool; got %q", path, m.Role)
	}
	if err := m.validateContent(path); err != nil {
		return err
	}
	if m.ReasoningContent != nil && m.Reasoning != nil && *m.ReasoningContent != *m.Reasoning {
		return invalid(path+".reasoning", "%s has reasoning_content and reasoning with different texts; send one of them", path)
	}
	if len(m.ToolCalls) > 0 && m.Role != "assistant" {
		return invalid(path+".tool_calls", "%s.tool_calls is only allowed on an assistant message", path)
	}
	for i, c := range m.ToolCalls {
		at := fmt.Sprintf("%s.tool_calls[%d]", path, i)
		if c.Type != "" && c.Type != "function" {
			return unsupported(at+".type", "%s.type %q is not supported; want function", at, c.Type)
		}
		if c.Function.Name == "" {
			return invalid(at+".function.name", "%s.function.name is required", at)
		}
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return invalid(path+".tool_call_id", "%s.tool_call_id is required on a tool message", path)
	}
	return nil
}

func (m *Message) validateContent(path string) error {
	switch {
	case m.Content.Kind == ContentAbsent && m.Role == "assistant":
		if len(m.ToolCalls) == 0 && m.Thinking() == nil && m.Refusal == nil {
			return invalid(path+".content", "%s.content is required unless tool_calls is set", path)
		}
	case m.Content.Kind == ContentAbsent:
		return invalid(path+".content", "%s.content is required", path)
	}
	for i, p := range m.Content.Parts {
		at := fmt.Sprintf("%s.content[%d]", path, i)
		switch p.Type {
		case "text":
			if p.Text == nil {
				return invalid(at+".text", "%s.text is required on a text part", at)
			}
		case "refusal":
			if m.Role != "assistant" || p.Refusal == nil {
				return invalid(at+".type", "%s: a refusal part needs refusal text and belongs on an assistant message", at)
			}
		case "image_url", "input_audio", "file":
			return unsupported(at+".type", "%s: %s parts are not supported: the models served read text only", at, p.Type)
		case "":
			return invalid(at+".type", "%s.type is required", at)
		default:
			return invalid(at+".type", "%s.type must be text; got %q", at, p.Type)
		}
	}
	return nil
}

// functionName is OpenAI's rule for function names.
var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func validateTools(tools []Tool, path string) error {
	for i, t := range tools {
		at := fmt.Sprintf("%s[%d]", path, i)
		if t.Type != "function" {
			if t.Type == "" {
				return invalid(at+".type", "%s.type is required", at)
			}
			return unsupported(at+".type", "%s.type %q is not supported; want function", at, t.Type)
		}
		if t.Function == nil {
			return invalid(at+".function", "%s.function is required", at)
		}
		if err := validateFunction(t.Function.Name, t.Function.Parameters, at+".function"); err != nil {
			return err
		}
	}
	return nil
}

func validateFunction(name string, params json.RawMessage, path string) error {
	if !functionName.MatchString(name) {
		return invalid(path+".name", "%s.name must be 1 to 64 letters, digits, _ or -; got %q", path, name)
	}
	return validateObject(params, path+".parameters")
}

func (f *ResponseFormat) validate(path string) error {
	if f == nil {
		return nil
	}
	switch f.Type {
	case "text", "json_object":
		if f.JSONSchema != nil {
			return invalid(path+".json_schema", "%s.json_schema is only allowed with type json_schema", path)
		}
		return nil
	case "json_schema":
		if f.JSONSchema == nil {
			return invalid(path+".json_schema", "%s.json_schema is required with type json_schema", path)
		}
		return f.JSONSchema.validate(path + ".json_schema")
	case "":
		return invalid(path+".type", "%s.type is required", path)
	}
	return invalid(path+".type", "%s.type must be text, json_object or json_schema; got %q", path, f.Type)
}

func (s *JSONSchema) validate(path string) error {
	if !functionName.MatchString(s.Name) {
		return invalid(path+".name", "%s.name must be 1 to 64 letters, digits, _ or -; got %q", path, s.Name)
	}
	return validateObject(s.Schema, path+".schema")
}
