package prism

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/templates"
	"github.com/prism-local/prism/tools"
)

// ChatRequest is one assistant turn asked of a model: the conversation so
// far and how the answer is to be produced. Its zero value (plus Messages)
// asks for a free answer with the model folder's sampling defaults.
type ChatRequest struct {
	// Messages is the conversation, oldest first.
	Messages []Message
	// Tools are the function tools offered to the model.
	Tools []Tool
	// ToolChoice says whether the answer may, must or must not call a
	// tool; the zero value is auto.
	ToolChoice ToolChoice
	// SerialToolCalls stops the answer after its first tool call
	// (parallel_tool_calls false); by default a turn may make several.
	SerialToolCalls bool
	// AllowRepeatedCalls lets an answer go on after a tool call that
	// repeats an earlier call of the same answer (same name, same
	// arguments). By default the answer stops there, with that call, and
	// an EventWarning says why: a model that repeats a call is looping.
	AllowRepeatedCalls bool
	// ResponseFormat constrains the answer's content to JSON; the zero
	// value leaves it free text.
	ResponseFormat ResponseFormat

	// ReasoningEffort reaches the chat template as reasoning_effort
	// ("low", "medium", "high", ...); empty leaves it undefined.
	ReasoningEffort string
	// TemplateVars are further variables of the chat template, such as
	// enable_thinking; a value is any Go value or a json.RawMessage.
	TemplateVars map[string]any

	// Sampling: nil leaves a field to the model folder's generation
	// defaults. An explicit Temperature of 0 is greedy decoding.
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	FrequencyPenalty  *float64
	PresencePenalty   *float64
	RepetitionPenalty *float64
	// Seed makes sampling reproducible; nil draws one.
	Seed *int64
	// Stop lists strings that end the answer; they are not part of it.
	Stop []string
	// MaxTokens caps the generated tokens; 0 is the engine's default.
	MaxTokens int
	// Logprobs asks for the log-probability of each content token
	// (EventLogprobs) and TopLogprobs for that many alternatives each.
	Logprobs    bool
	TopLogprobs int
	// NoSpeculation turns speculative decoding off for this answer
	// (engine.Request.NoSpeculation): the same tokens, decoded one step
	// at a time.
	NoSpeculation bool
}

// Message is one message of a conversation.
type Message struct {
	// Role is system, developer (rendered as system), user, assistant or
	// tool.
	Role string
	// Content is the message's text; its zero value is null, as an
	// assistant message carrying only tool calls has.
	Content Content
	// Name is a participant's name, or the tool's on a tool message.
	Name string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string
	// Reasoning is an assistant message's earlier thinking; nil for none.
	Reasoning *string
}

// Content is a message's content: text, text parts, or null (the zero
// value).
type Content struct {
	text  string
	parts []string
	set   bool
}

// Text is content given as one string.
func Text(s string) Content { return Content{text: s, set: true} }

// TextParts is content given as a list of text parts; the template sees
// their text joined.
func TextParts(parts ...string) Content {
	return Content{parts: parts, text: strings.Join(parts, ""), set: true}
}

// String returns the content's text ("" for null).
func (c Content) String() string { return c.text }

// IsNull reports whether the content is null.
func (c Content) IsNull() bool { return !c.set }

// System is a system message saying text.
func System(text string) Message { return Message{Role: "system", Content: Text(text)} }

// User is a user message saying text.
func User(text string) Message { return Message{Role: "user", Content: Text(text)} }

// Assistant is an assistant message saying text.
func Assistant(text string) Message { return Message{Role: "assistant", Content: Text(text)} }

// ToolResult is the tool message answering the call callID with result.
func ToolResult(callID, result string) Message {
	return Message{Role: "tool", ToolCallID: callID, Content: Text(result)}
}

// ToolCall is a call an assistant message made.
type ToolCall struct {
	// ID is the call's id.
	ID string
	// Name is the function called.
	Name string
	// Arguments is the arguments' JSON text: an object, as the answer
	// that made the call wrote it.
	Arguments string
}

// Tool is a function tool offered to the model.
type Tool struct {
	// Name is the function's name.
	Name string
	// Description says what the function does.
	Description string
	// Parameters is the JSON Schema of its arguments; nil for none.
	Parameters json.RawMessage
	// Strict refuses a schema keyword the grammar cannot enforce (a
	// *grammar.SchemaError naming the tool) instead of leaving it out.
	Strict bool
	// JSON, when set, is the tool exactly as a client sent it
	// ({"type":"function","function":{...}}): the chat template sees it
	// key order and all, and the fields above are not read.
	JSON json.RawMessage
}

// raw returns the tool as the template and the tools package read it.
func (t Tool) raw() (json.RawMessage, error) {
	if t.JSON != nil {
		return t.JSON, nil
	}
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      bool            `json:"strict,omitempty"`
	}
	return json.Marshal(struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}{"function", function{t.Name, t.Description, t.Parameters, t.Strict}})
}

// ToolMode is what ToolChoice asks of the answer.
type ToolMode uint8

const (
	// ToolAuto lets the model choose between text and tool calls.
	ToolAuto ToolMode = iota
	// ToolNone offers no tools: the answer is text.
	ToolNone
	// ToolRequired demands at least one call of an offered tool.
	ToolRequired
	// ToolNamed demands a call of the tool ToolChoice.Name.
	ToolNamed
)

// ToolChoice is tool_choice.
type ToolChoice struct {
	Mode ToolMode
	// Name is the tool a ToolNamed choice demands.
	Name string
}

// CallTool is the choice that demands a call of the tool name.
func CallTool(name string) ToolChoice { return ToolChoice{Mode: ToolNamed, Name: name} }

// ParseToolChoice reads tool_choice as the OpenAI API sends it: "none",
// "auto", "required", {"type":"function","function":{"name":...}}, or
// nothing (auto). Another shape is an error with code
// invalid_request_error naming tool_choice.
func ParseToolChoice(raw json.RawMessage) (ToolChoice, error) {
	c, err := tools.ParseChoice(raw)
	if err != nil {
		return ToolChoice{}, requestError(err)
	}
	switch c.Mode {
	case tools.ChoiceNone:
		return ToolChoice{Mode: ToolNone}, nil
	case tools.ChoiceRequired:
		return ToolChoice{Mode: ToolRequired}, nil
	case tools.ChoiceFunction:
		return CallTool(c.Name), nil
	}
	return ToolChoice{}, nil
}

// raw is the choice as the tools package reads it.
func (c ToolChoice) raw() json.RawMessage {
	switch c.Mode {
	case ToolNone:
		return json.RawMessage(`"none"`)
	case ToolRequired:
		return json.RawMessage(`"required"`)
	case ToolNamed:
		b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
		return b
	}
	return nil
}

// FormatType is the kind of a ResponseFormat.
type FormatType uint8

const (
	// FormatText is free text.
	FormatText FormatType = iota
	// FormatJSONObject is any JSON object (JSON mode).
	FormatJSONObject
	// FormatJSONSchema is a JSON value valid for ResponseFormat.Schema.
	FormatJSONSchema
)

// ResponseFormat is response_format.
type ResponseFormat struct {
	Type FormatType
	// Schema is a FormatJSONSchema's JSON Schema. It is always enforced
	// strictly: a keyword the grammar cannot enforce is a
	// *grammar.SchemaError naming response_format.json_schema.schema,
	// before the answer begins.
	Schema json.RawMessage
}

// JSONSchema is the response format of a value valid for schema.
func JSONSchema(schema json.RawMessage) ResponseFormat {
	return ResponseFormat{Type: FormatJSONSchema, Schema: schema}
}

// RequestError is a chat request that cannot be served as asked; Param
// names the field at fault in the OpenAI API's words ("tool_choice",
// "response_format.json_schema.schema", "tools[0].function.parameters"),
// empty when no one field is. Err is the cause when a package below
// found the fault (a *tools.Error, *templates.TemplateRenderError or
// *grammar.SchemaError): errors.As reaches it.
type RequestError struct {
	// ErrCode is invalid_request_error, unsupported_parameter,
	// template_render_failed or a schema's code.
	ErrCode string
	Param   string
	Message string
	Err     error
}

func (e *RequestError) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *RequestError) Unwrap() error { return e.Err }

// requestError gives the faults of a request that the packages below
// find one type, RequestError, keeping them as its cause.
func requestError(err error) error {
	var (
		te  *tools.Error
		tre *templates.TemplateRenderError
		se  *grammar.SchemaError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return &RequestError{ErrCode: te.Code(), Param: te.Param, Message: te.Message, Err: err}
	case errors.As(err, &tre):
		return &RequestError{ErrCode: errcode.TemplateRenderFailed, Message: tre.Error(), Err: err}
	case errors.As(err, &se):
		return &RequestError{ErrCode: se.Code(), Param: se.Param, Message: se.Error(), Err: err}
	}
	return err
}

// Code returns the error's code.
func (e *RequestError) Code() string { return e.ErrCode }

// ParamName returns Param.
func (e *RequestError) ParamName() string { return e.Param }

// CodeUnsupportedParameter is the code of a parameter the backend cannot
// honour: the request is refused rather than answered differently.
const CodeUnsupportedParameter = "unsupported_parameter"

func unsupported(param, format string, args ...any) error {
	return &RequestError{ErrCode: CodeUnsupportedParameter, Param: param, Message: fmt.Sprintf(format, args...)}
}

func invalid(param, format string, args ...any) error {
	return &RequestError{ErrCode: errcode.InvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// rawTools returns the offered tools as the tools package reads them.
func (r *ChatRequest) rawTools() ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(r.Tools))
	for i, t := range r.Tools {
		raw, err := t.raw()
		if err != nil {
			return nil, invalid("tools", "tools[%d]: %v", i, err)
		}
		out[i] = raw
	}
	return out, nil
}

// templateInput turns the messages into what the template sees. With
// objectArgs, a call's arguments that are a JSON object reach it as that
// object (Models.objectArguments); otherwise, and when they are not one,
// as the string they are.
func (r *ChatRequest) templateInput(offered []json.RawMessage, objectArgs func() bool) (templates.Input, error) {
	in := templates.Input{Tools: offered, AddGenerationPrompt: true}
	for _, m := range r.Messages {
		tm := templates.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, ReasoningContent: m.Reasoning}
		if tm.Role == "developer" {
			tm.Role = "system" // the templates know system; developer is its newer name
		}
		tm.Content = templates.Null()
		if m.Content.set {
			tm.Content = templates.Text(m.Content.text)
		}
		for _, c := range m.ToolCalls {
			args, err := callArguments(c.Arguments, objectArgs)
			if err != nil {
				return in, err
			}
			tm.ToolCalls = append(tm.ToolCalls, templates.ToolCall{ID: c.ID, Type: "function",
				Function: templates.FunctionCall{Name: c.Name, Arguments: args}})
		}
		in.Messages = append(in.Messages, tm)
	}
	if r.ReasoningEffort != "" || len(r.TemplateVars) > 0 {
		in.Extra = map[string]any{}
	}
	if r.ReasoningEffort != "" {
		in.Extra["reasoning_effort"] = r.ReasoningEffort
	}
	for k, v := range r.TemplateVars {
		in.Extra[k] = v
	}
	return in, nil
}

// callArguments is a call's arguments as the template gets them: the
// object their text encodes when objectArgs is set and it is one, else
// the text as a JSON string. objectArgs is asked only for an object.
func callArguments(text string, objectArgs func() bool) (json.RawMessage, error) {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) && objectArgs() {
		return json.RawMessage(t), nil
	}
	return json.Marshal(text)
}

// engineRequest is the engine's request for prompt.
func (r *ChatRequest) engineRequest(prompt string) engine.Request {
	// An omitted temperature stays 0 so the engine applies the model
	// folder's generation defaults (greedy when it declares sampling off or
	// nothing). An explicit 0 also sets top_k 1: the engine reads a zero
	// temperature as unset, and the caller asked for greedy, not for the
	// model's temperature.
	out := engine.Request{Prompt: prompt, MaxTokens: r.MaxTokens, Stop: r.Stop, Seed: r.Seed}
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&out.Temperature, r.Temperature)
	set(&out.TopP, r.TopP)
	set(&out.MinP, r.MinP)
	set(&out.FrequencyPenalty, r.FrequencyPenalty)
	set(&out.PresencePenalty, r.PresencePenalty)
	set(&out.RepetitionPenalty, r.RepetitionPenalty)
	if r.TopK != nil {
		out.TopK = *r.TopK
	}
	if v := r.Temperature; v != nil && *v == 0 {
		out.TopK = 1 // greedy, whatever top_k the request or the folder gives
	}
	out.NoSpeculation = r.NoSpeculation
	out.Logprobs = r.Logprobs
	if r.Logprobs {
		out.TopLogprobs = r.TopLogprobs
	}
	return out
}
