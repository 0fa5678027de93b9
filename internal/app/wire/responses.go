package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ResponsesRequest is the body of POST /v1/responses. The server is
// stateless: previous_response_id, conversation, store: true and
// background: true are refused, since each needs a response kept on the
// server.
type ResponsesRequest struct {
	Model        string        `json:"model"`
	Input        ResponseInput `json:"input"`
	Instructions string        `json:"instructions"`

	Tools []ResponseTool `json:"tools"`
	// ToolChoice is the raw tool_choice; ChatToolChoice converts it to the
	// chat form the tools package reads.
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	// AllowRepeatedCalls is Prism's, as in a chat request.
	AllowRepeatedCalls bool `json:"allow_repeated_calls"`

	MaxOutputTokens *int             `json:"max_output_tokens"`
	Temperature     *float64         `json:"temperature"`
	TopP            *float64         `json:"top_p"`
	TopLogprobs     *int             `json:"top_logprobs"`
	Text            *TextConfig      `json:"text"`
	Reasoning       *ReasoningConfig `json:"reasoning"`
	// Speculation false turns speculative decoding off (a Prism
	// extension, as on chat completions).
	Speculation *bool `json:"speculation"`

	Stream        bool                    `json:"stream"`
	StreamOptions *ResponsesStreamOptions `json:"stream_options"`

	Store              *bool   `json:"store"`
	Background         *bool   `json:"background"`
	PreviousResponseID Refused `json:"previous_response_id" why:"this server is stateless and keeps no responses; send the whole conversation in input"`
	Conversation       Refused `json:"conversation" why:"this server is stateless and keeps no conversations; send the whole conversation in input"`
	Prompt             Refused `json:"prompt" why:"this server keeps no prompt templates"`

	// Include names extra output: IncludeLogprobs is served,
	// IncludeEncryptedReasoning accepted (see IncludeValues); any other
	// value is refused.
	Include []string `json:"include"`

	// Accepted and not used: they do not change the answer.
	Metadata         json.RawMessage `json:"metadata"`
	User             string          `json:"user"`
	ServiceTier      string          `json:"service_tier"`
	PromptCacheKey   string          `json:"prompt_cache_key"`
	SafetyIdentifier string          `json:"safety_identifier"`
	Truncation       string          `json:"truncation"`
	MaxToolCalls     *int            `json:"max_tool_calls"`
}

// ResponsesStreamOptions is the stream_options of a Responses request.
type ResponsesStreamOptions struct {
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

// ResponseInput is the input: a string (one user message) or a list of
// items.
type ResponseInput struct {
	Text  string
	Items []InputItem
	// IsItems tells that the input was sent as a list.
	IsItems bool
}

func (in *ResponseInput) decodeWire(raw []byte, path string) *Error {
	*in = ResponseInput{}
	switch raw[0] {
	case '"':
		return decodeInto(raw, &in.Text, path)
	case '[':
		in.IsItems = true
		return decodeInto(raw, &in.Items, path)
	}
	return invalid(path, "%s: want a string or an array of items, got %s", path, kindOf(raw))
}

// InputItem is one item of a Responses input: a message, a function_call
// the model made earlier, the function_call_output answering it, or a
// reasoning item. A message may leave out type.
type InputItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content ItemContent  `json:"content"`
	Summary []OutputPart `json:"summary"`

	// function_call and function_call_output
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Output is the function's result: a string, or a list of content
	// parts whose text is read.
	Output ItemContent `json:"output"`
}

func (*InputItem) tolerant() {}

// ItemContent is the content of an input item: a string or a list of
// parts.
type ItemContent struct {
	Text  string
	Parts []OutputPart
	Kind  ContentKind
}

func (c *ItemContent) decodeWire(raw []byte, path string) *Error {
	*c = ItemContent{}
	return decodeTextOrParts(raw, path, &c.Text, &c.Parts, &c.Kind)
}

// String returns the text: the string, or the parts' texts joined.
func (c ItemContent) String() string {
	if c.Kind != ContentParts {
		return c.Text
	}
	var b bytes.Buffer
	for _, p := range c.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// OutputPart is a content part: input_text, output_text, refusal,
// reasoning_text or summary_text in a request; output_text and
// reasoning_text in a response.
type OutputPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal,omitempty"`
	// Logprobs are an output_text part's token log-probabilities, written
	// as its logprobs list; not read from a request.
	Logprobs []TokenLogprob `json:"-"`
}

func (*OutputPart) tolerant() {}

// MarshalJSON writes an output_text part with the annotations and
// logprobs lists OpenAI always sends, empty when none were asked for.
func (p OutputPart) MarshalJSON() ([]byte, error) {
	type plain OutputPart
	if p.Type != "output_text" {
		return json.Marshal(plain(p))
	}
	lp := p.Logprobs
	if lp == nil {
		lp = []TokenLogprob{}
	}
	return json.Marshal(struct {
		plain
		Annotations []struct{}     `json:"annotations"`
		Logprobs    []TokenLogprob `json:"logprobs"`
	}{plain(p), []struct{}{}, lp})
}

// ResponseTool is a tool of a Responses request; only function tools are
// served.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// TextConfig is the text parameter: the output format.
type TextConfig struct {
	Format    *TextFormat `json:"format,omitempty"`
	Verbosity string      `json:"verbosity,omitempty"`
}

// TextFormat is text.format: text, json_object or json_schema (with the
// schema's fields beside type, unlike chat's response_format).
type TextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ReasoningConfig is the reasoning parameter; the effort reaches the chat
// template as reasoning_effort.
type ReasoningConfig struct {
	Effort          string `json:"effort,omitempty"`
	Summary         string `json:"summary,omitempty"`
	GenerateSummary string `json:"generate_summary,omitempty"`
}

// DecodeResponses decodes and validates a Responses request body.
func DecodeResponses(body []byte) (*ResponsesRequest, error) {
	return decodeRequest[ResponsesRequest](body)
}

func (r *ResponsesRequest) validate() error {
	switch {
	case r.Model == "":
		return invalid("model", "model is required")
	case r.Store != nil && *r.Store:
		return unsupported("store", "store: true is not supported: this server is stateless and keeps no responses; send store: false or leave it out")
	case r.Background != nil && *r.Background:
		return unsupported("background", "background: true is not supported: this server is stateless and keeps no responses")
	case !r.Input.IsItems && r.Input.Text == "":
		return invalid("input", "input is required and must not be empty")
	case r.Input.IsItems && len(r.Input.Items) == 0:
		return invalid("input", "input must hold at least one item")
	}
	turns := !r.Input.IsItems
	for i := range r.Input.Items {
		if err := r.Input.Items[i].validate("input[" + strconv.Itoa(i) + "]"); err != nil {
			return err
		}
		turns = turns || r.Input.Items[i].Type != "reasoning"
	}
	if !turns {
		return invalid("input", "input holds only reasoning items; it needs a message, function_call or function_call_output")
	}
	for i, t := range r.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return unsupported(at+".type", "%s.type %q is not supported; want function", at, t.Type)
		}
		if err := validateFunction(t.Name, t.Parameters, at); err != nil {
			return err
		}
	}
	if _, err := r.ChatToolChoice(); err != nil {
		return err
	}
	if err := validateLimits(r.MaxOutputTokens, nil); err != nil {
		if e, ok := err.(*Error); ok {
			e.Param, e.Message = "max_output_tokens", "max_output_tokens must be at least 1"
		}
		return err
	}
	if r.TopLogprobs != nil && (*r.TopLogprobs < 0 || *r.TopLogprobs > 20) {
		return invalid("top_logprobs", "top_logprobs must be between 0 and 20, got %d", *r.TopLogprobs)
	}
	if err := validateInclude(r.Include); err != nil {
		return err
	}
	if r.Text != nil && r.Text.Format != nil {
		if err := r.Text.Format.validate("text.format"); err != nil {
			return err
		}
	}
	if r.Reasoning != nil {
		return validateEffort(r.Reasoning.Effort, "reasoning.effort")
	}
	return nil
}

// Values of a Responses request's include that Prism takes.
const (
	// IncludeLogprobs asks for the log-probabilities of the output text's
	// tokens (OutputPart.Logprobs, and each output_text delta's).
	IncludeLogprobs = "message.output_text.logprobs"
	// IncludeEncryptedReasoning asks for reasoning items that a stateless
	// client can send back. Prism's reasoning items carry their text in
	// plain content, which the server reads back from input, so it is
	// accepted and nothing more is written.
	IncludeEncryptedReasoning = "reasoning.encrypted_content"
)

// validateInclude accepts IncludeLogprobs and IncludeEncryptedReasoning.
// The other values OpenAI documents ask for the output of hosted tools or
// for input images, neither of which a request here can have; they are
// refused, as are values nobody documents, rather than ignored.
func validateInclude(values []string) error {
	for i, v := range values {
		at := "include[" + strconv.Itoa(i) + "]"
		switch v {
		case IncludeLogprobs, IncludeEncryptedReasoning:
		case "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
			"code_interpreter_call.outputs", "computer_call_output.output.image_url":
			return unsupported(at, "%s %q is not supported: it is the output of a hosted tool, and this server runs function tools only", at, v)
		case "message.input_image.image_url":
			return unsupported(at, "%s %q is not supported: the models served read text only, so input images are refused", at, v)
		default:
			return unsupported(at, "%s %q is not supported; this server serves %q and accepts %q", at, v, IncludeLogprobs, IncludeEncryptedReasoning)
		}
	}
	return nil
}

// WantsLogprobs reports whether the request asks for the output text's
// log-probabilities: include names IncludeLogprobs, or top_logprobs is
// above 0 (alternatives are asked for, and they come with the entries
// they belong to).
func (r *ResponsesRequest) WantsLogprobs() bool {
	return r.LogprobsParam() != ""
}

// LogprobsParam returns the field that asks for log-probabilities,
// include[i] first, then top_logprobs; "" when none does.
func (r *ResponsesRequest) LogprobsParam() string {
	for i, v := range r.Include {
		if v == IncludeLogprobs {
			return "include[" + strconv.Itoa(i) + "]"
		}
	}
	if r.TopLogprobs != nil && *r.TopLogprobs > 0 {
		return "top_logprobs"
	}
	return ""
}

func (f *TextFormat) validate(path string) error {
	switch f.Type {
	case "text", "json_object":
		return nil
	case "json_schema":
		return (&JSONSchema{Name: f.Name, Schema: f.Schema}).validate(path)
	}
	return invalid(path+".type", "%s.type must be text, json_object or json_schema; got %q", path, f.Type)
}

func (it *InputItem) validate(path string) error {
	switch it.Type {
	case "", "message":
		return it.validateMessage(path)
	case "function_call":
		if it.CallID == "" {
			return invalid(path+".call_id", "%s.call_id is required on a function_call item", path)
		}
		if !functionName.MatchString(it.Name) {
			return invalid(path+".name", "%s.name must be 1 to 64 letters, digits, _ or -; got %q", path, it.Name)
		}
	case "function_call_output":
		if it.CallID == "" {
			return invalid(path+".call_id", "%s.call_id is required on a function_call_output item", path)
		}
		if it.Output.Kind == ContentAbsent {
			return invalid(path+".output", "%s.output is required on a function_call_output item", path)
		}
		return validateTextParts(it.Output.Parts, path+".output")
	case "reasoning":
	case "item_reference":
		return unsupported(path+".type", "%s: item_reference is not supported: this server is stateless and keeps no items; send the item itself", path)
	default:
		return unsupported(path+".type", "%s.type %q is not supported; want message, function_call, function_call_output or reasoning", path, it.Type)
	}
	return nil
}

func (it *InputItem) validateMessage(path string) error {
	if it.Role == "" {
		return invalid(path+".role", "%s.role is required", path)
	}
	if it.Role != "user" && it.Role != "assistant" && it.Role != "system" && it.Role != "developer" {
		return invalid(path+".role", "%s.role must be user, assistant, system or developer; got %q", path, it.Role)
	}
	if it.Content.Kind == ContentAbsent {
		return invalid(path+".content", "%s.content is required", path)
	}
	return validateTextParts(it.Content.Parts, path+".content")
}

// validateTextParts accepts the text parts of a message's content or a
// function's output and refuses the others.
func validateTextParts(parts []OutputPart, path string) error {
	for i, p := range parts {
		at := fmt.Sprintf("%s[%d]", path, i)
		switch p.Type {
		case "input_text", "output_text", "refusal":
		case "input_image", "input_file", "input_audio":
			return unsupported(at+".type", "%s: %s parts are not supported: the models served read text only", at, p.Type)
		default:
			return invalid(at+".type", "%s.type must be input_text or output_text; got %q", at, p.Type)
		}
	}
	return nil
}

// ChatToolChoice returns tool_choice in the chat form the tools package
// reads: the strings as they are, {"type": "function", "name": N} as
// {"type": "function", "function": {"name": N}}; nil when none was sent.
func (r *ResponsesRequest) ChatToolChoice() (json.RawMessage, error) {
	raw := bytes.TrimSpace(r.ToolChoice)
	if len(raw) == 0 || string(raw) == "null" || raw[0] == '"' {
		return raw, nil
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, invalid("tool_choice", `tool_choice must be "none", "auto", "required" or {"type": "function", "name": ...}`)
	}
	if obj.Type != "function" {
		return nil, unsupported("tool_choice", "tool_choice of type %q is not supported; only function tools are served", obj.Type)
	}
	if obj.Name == "" {
		return nil, invalid("tool_choice.name", "tool_choice.name is required")
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": obj.Name}})
	return b, nil
}

// ChatTools returns the tools in the chat form ({"type": "function",
// "function": {...}}) the tools and templates packages read.
func (r *ResponsesRequest) ChatTools() []json.RawMessage {
	if r.Tools == nil {
		return nil
	}
	out := make([]json.RawMessage, len(r.Tools))
	for i, t := range r.Tools {
		b, _ := json.Marshal(struct {
			Type     string      `json:"type"`
			Function FunctionDef `json:"function"`
		}{"function", FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
		out[i] = b
	}
	return out
}

// ResponseFormat returns text.format as chat's response_format; nil when
// none was sent.
func (r *ResponsesRequest) ResponseFormat() *ResponseFormat {
	if r.Text == nil || r.Text.Format == nil {
		return nil
	}
	f := r.Text.Format
	out := &ResponseFormat{Type: f.Type}
	if f.Type == "json_schema" {
		out.JSONSchema = &JSONSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
	}
	return out
}

// Messages returns the conversation in the chat form: instructions as a
// system message first, the input items in order, function_call items
// folded into the assistant message before them (or into a new one, with
// the reasoning item before them and empty content), function_call_output
// items as tool messages.
func (r *ResponsesRequest) Messages() []Message {
	var out []Message
	if r.Instructions != "" {
		out = append(out, textMessage("system", r.Instructions))
	}
	if !r.Input.IsItems {
		return append(out, textMessage("user", r.Input.Text))
	}
	var thinking *string
	for _, it := range r.Input.Items {
		switch it.Type {
		case "", "message":
			m := textMessage(it.Role, it.Content.String())
			if it.Role == "assistant" {
				m.ReasoningContent = thinking
			}
			out = append(out, m)
		case "reasoning":
			t := it.Content.String()
			if t == "" {
				t = joinParts(it.Summary)
			}
			thinking = &t
			continue
		case "function_call":
			// The calls join the assistant turn before them, the text the
			// model wrote ahead of them included, as in the chat form. A turn
			// of calls alone has empty content: templates read it as text.
			call := ToolCall{ID: it.CallID, Type: "function", Function: FunctionCall{Name: it.Name, Arguments: it.Arguments}}
			if n := len(out); n > 0 && out[n-1].Role == "assistant" && thinking == nil {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			} else {
				m := textMessage("assistant", "")
				m.ToolCalls, m.ReasoningContent = []ToolCall{call}, thinking
				out = append(out, m)
			}
		case "function_call_output":
			m := textMessage("tool", it.Output.String())
			m.ToolCallID = it.CallID
			out = append(out, m)
		}
		thinking = nil
	}
	return out
}

func textMessage(role, text string) Message {
	return Message{Role: role, Content: Content{Kind: ContentString, Text: text}}
}

func joinParts(parts []OutputPart) string {
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ChatRequest returns the request in the chat form, which the server
// plans and generates on the one path both endpoints share: the
// conversation of Messages, the tools of ChatTools (as sent, for the
// template), ChatToolChoice, ResponseFormat, max_output_tokens as
// max_completion_tokens, reasoning.effort as reasoning_effort, the
// sampling parameters, and logprobs (with top_logprobs) when
// WantsLogprobs. An error of the chat path names a chat parameter;
// ResponsesParam names it as this request does.
func (r *ResponsesRequest) ChatRequest() (*ChatRequest, error) {
	choice, err := r.ChatToolChoice()
	if err != nil {
		return nil, err
	}
	out := &ChatRequest{Model: r.Model, Messages: r.Messages(), ToolChoice: choice, ParallelToolCalls: r.ParallelToolCalls,
		AllowRepeatedCalls: r.AllowRepeatedCalls, ResponseFormat: r.ResponseFormat(), MaxCompletionTokens: r.MaxOutputTokens, Stream: r.Stream}
	out.Temperature, out.TopP = r.Temperature, r.TopP
	out.Speculation = r.Speculation
	if r.WantsLogprobs() {
		out.Logprobs, out.TopLogprobs = true, r.TopLogprobs
	}
	if r.Reasoning != nil {
		out.ReasoningEffort = r.Reasoning.Effort
	}
	for i, raw := range r.ChatTools() {
		t := r.Tools[i]
		out.Tools = append(out.Tools, Tool{Type: "function", Raw: raw,
			Function: &FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
	}
	return out, nil
}

// ResponsesParam returns the Responses request field that the chat-form
// field param (of a ChatRequest made by ChatRequest) came from: messages
// are input, response_format is text.format (its json_schema.schema is
// text.format.schema), max_tokens and max_completion_tokens are
// max_output_tokens, reasoning_effort is reasoning.effort, and a tool's
// function.X is the tool's X. Other names are the same in both.
func ResponsesParam(param string) string {
	switch {
	case param == "messages" || strings.HasPrefix(param, "messages[") || strings.HasPrefix(param, "messages."):
		// Messages fold items together (calls into one assistant turn), so
		// an index does not carry over.
		return "input"
	case param == "response_format.json_schema.schema" || strings.HasPrefix(param, "response_format.json_schema.schema."):
		return "text.format.schema" + strings.TrimPrefix(param, "response_format.json_schema.schema")
	case param == "response_format" || strings.HasPrefix(param, "response_format."):
		return "text.format"
	case param == "max_tokens" || param == "max_completion_tokens":
		return "max_output_tokens"
	case param == "reasoning_effort":
		return "reasoning.effort"
	case strings.HasPrefix(param, "tools["):
		if i := strings.Index(param, "].function"); i >= 0 {
			return param[:i+1] + param[i+len("].function"):]
		}
	}
	return param
}
