package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/reasoning"
)

// CodeChoiceUnsatisfied marks an answer that did not make the tool call
// tool_choice demanded (see Narrowed.Verify); it is
// [errcode.ToolChoiceUnsatisfied]. Malformed tool_choice or tools values
// carry [errcode.InvalidRequest] (HTTP 400).
const CodeChoiceUnsatisfied = errcode.ToolChoiceUnsatisfied

// AcceptedChoices names the tool_choice shapes Narrow accepts.
const AcceptedChoices = `"none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}`

// Error is a tools error with a stable code; match it with errors.As and
// read the code with Code.
type Error struct {
	// code is errcode.InvalidRequest or CodeChoiceUnsatisfied.
	code string
	// Param names the request field at fault ("tool_choice" or "tools").
	Param string
	// Message says what is wrong and what is accepted.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Code returns "invalid_request_error" for a malformed tool_choice or tools
// value and "tool_choice_unsatisfied" for an answer Verify refused.
func (e *Error) Code() string { return e.code }

// ParamName returns Param.
func (e *Error) ParamName() string { return e.Param }

// ChoiceMode is the kind of a tool_choice.
type ChoiceMode uint8

const (
	// ChoiceAuto lets the model decide (also the meaning of an absent
	// tool_choice).
	ChoiceAuto ChoiceMode = iota
	// ChoiceNone offers no tools.
	ChoiceNone
	// ChoiceRequired demands some tool call.
	ChoiceRequired
	// ChoiceFunction demands a call of one named function.
	ChoiceFunction
)

// String returns "auto", "none", "required" or "function".
func (m ChoiceMode) String() string {
	switch m {
	case ChoiceAuto:
		return "auto"
	case ChoiceNone:
		return "none"
	case ChoiceRequired:
		return "required"
	case ChoiceFunction:
		return "function"
	}
	return "unknown"
}

// Choice is a parsed tool_choice.
type Choice struct {
	Mode ChoiceMode
	// Name is the function a ChoiceFunction names.
	Name string
}

// ParseChoice parses a raw tool_choice value. Empty input and JSON null
// mean absent (auto). Any shape other than AcceptedChoices is an *Error with
// code invalid_request_error.
func ParseChoice(raw json.RawMessage) (Choice, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Choice{Mode: ChoiceAuto}, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Choice{}, shapeError(raw, err)
		}
		switch s {
		case "none":
			return Choice{Mode: ChoiceNone}, nil
		case "auto":
			return Choice{Mode: ChoiceAuto}, nil
		case "required":
			return Choice{Mode: ChoiceRequired}, nil
		}
		return Choice{}, shapeError(raw, nil)
	case '{':
		var obj struct {
			Type     string `json:"type"`
			Function *struct {
				Name *string `json:"name"`
			} `json:"function"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&obj); err != nil {
			return Choice{}, shapeError(raw, err)
		}
		if obj.Type != "function" || obj.Function == nil || obj.Function.Name == nil || *obj.Function.Name == "" {
			return Choice{}, shapeError(raw, nil)
		}
		return Choice{Mode: ChoiceFunction, Name: *obj.Function.Name}, nil
	}
	return Choice{}, shapeError(raw, nil)
}

func shapeError(raw json.RawMessage, cause error) error {
	shown := string(raw)
	if len(shown) > 120 {
		shown = shown[:120] + "…"
	}
	return &Error{
		code:    errcode.InvalidRequest,
		Param:   "tool_choice",
		Message: fmt.Sprintf("invalid tool_choice %s: it must be %s", shown, AcceptedChoices),
		Err:     cause,
	}
}

// ToolName returns the function name of one tool definition
// ({"type": "function", "function": {"name": ...}}).
func ToolName(tool json.RawMessage) (string, error) {
	var t struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tool, &t); err != nil {
		return "", err
	}
	if t.Function.Name == "" {
		return "", errors.New("no function.name")
	}
	return t.Function.Name, nil
}

// Narrowed is the outcome of applying tool_choice to a request's tools.
type Narrowed struct {
	// Choice is the parsed tool_choice.
	Choice Choice
	// Tools are the tools to offer the model, each exactly as the caller
	// sent it (nil for "none").
	Tools []json.RawMessage
	// Forced is the text to force at the start of the generated answer so
	// that a demanded call is made (empty when no call is demanded, or when
	// the format is FormatNone and nothing can be forced — then only
	// Verify can tell). Append it to the prompt and feed it to the
	// StreamParser before the generated pieces; see ForcedAfter for prompts
	// that leave a think block open.
	Forced string
	// Format is the tool-call format Forced is written in.
	Format Format
}

// MustCall reports whether the answer must be a tool call.
func (n Narrowed) MustCall() bool {
	return n.Choice.Mode == ChoiceRequired || n.Choice.Mode == ChoiceFunction
}

// Narrow applies a raw tool_choice to tools for a model whose tool-call
// format is f (spec P14). tools are the request's tool definitions as raw
// JSON; they are passed on untouched (key order kept) and only read for
// their names. Errors are *Error with code invalid_request_error: a
// tool_choice of another shape, a function name not among the tools (the message lists the
// tools offered), "required" with no tools, or a tool without a name.
func Narrow(toolChoice json.RawMessage, tools []json.RawMessage, f Format) (Narrowed, error) {
	choice, err := ParseChoice(toolChoice)
	if err != nil {
		return Narrowed{}, err
	}
	n := Narrowed{Choice: choice, Format: f}
	if choice.Mode == ChoiceNone {
		return n, nil
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		name, err := ToolName(t)
		if err != nil {
			return Narrowed{}, &Error{
				code:    errcode.InvalidRequest,
				Param:   "tools",
				Message: fmt.Sprintf("tools[%d] is not a function tool with a name: %v", i, err),
				Err:     err,
			}
		}
		names[i] = name
	}
	switch choice.Mode {
	case ChoiceAuto:
		n.Tools = tools
	case ChoiceRequired:
		if len(tools) == 0 {
			return Narrowed{}, &Error{code: errcode.InvalidRequest, Param: "tool_choice",
				Message: `tool_choice "required" needs at least one tool, but no tools were offered`}
		}
		n.Tools = tools
		n.Forced = forcedPrefix(f, "")
	case ChoiceFunction:
		for i, name := range names {
			if name == choice.Name {
				n.Tools = []json.RawMessage{tools[i]}
				break
			}
		}
		if n.Tools == nil {
			offered := "no tools were offered"
			if len(names) > 0 {
				offered = "the tools offered are: " + strings.Join(names, ", ")
			}
			return Narrowed{}, &Error{code: errcode.InvalidRequest, Param: "tool_choice",
				Message: fmt.Sprintf("tool_choice names function %q, which is not among the tools; %s", choice.Name, offered)}
		}
		n.Forced = forcedPrefix(f, choice.Name)
	}
	return n, nil
}

// forcedPrefix is the opening of a tool call in format f; with a name, the
// opening up to where the arguments begin.
func forcedPrefix(f Format, name string) string {
	quoted := ""
	if name != "" {
		quoted = jsonString(name)
	}
	switch f {
	case FormatHermes:
		if name == "" {
			return hermesOpen + "\n{\"name\": \""
		}
		return hermesOpen + "\n{\"name\": " + quoted + ", \"arguments\": "
	case FormatLlama3:
		if name == "" {
			return "{\"name\": \""
		}
		return "{\"name\": " + quoted + ", \"parameters\": "
	case FormatMistral:
		if name == "" {
			return mistralCalls + "[{\"name\": \""
		}
		return mistralCalls + "[{\"name\": " + quoted + ", \"arguments\": "
	case FormatDeepSeekV3:
		if name == "" {
			return dsCallsBegin + dsCallBegin + "function" + dsSep
		}
		return dsCallsBegin + dsCallBegin + "function" + dsSep + name + "\n```json\n"
	case FormatHarmony:
		if name == "" {
			return reasoning.HarmonyChannel + "commentary to=functions."
		}
		return reasoning.HarmonyChannel + "commentary to=functions." + name + " " + reasoning.HarmonyConstrain + "json" + reasoning.HarmonyMessage
	}
	return ""
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// ForcedAfter returns Forced adjusted for prompt: when the rendered prompt
// leaves a think block (or harmony analysis message) open, the forced text
// first closes it, so the call is not read as reasoning. opts are the
// reasoning options of the model (e.g. reasoning.WithTags).
func (n Narrowed) ForcedAfter(prompt string, opts ...reasoning.Option) string {
	if n.Forced == "" {
		return ""
	}
	if n.Format == FormatHarmony {
		if reasoning.PromptOpensReasoning(prompt, append([]reasoning.Option{reasoning.WithHarmony()}, opts...)...) {
			return reasoning.HarmonyEnd + reasoning.HarmonyStart + "assistant" + n.Forced
		}
		return n.Forced
	}
	if reasoning.PromptOpensReasoning(prompt, opts...) {
		_, closeTag := reasoning.Tags(opts...)
		return closeTag + "\n\n" + n.Forced
	}
	return n.Forced
}

// Verify checks that a parsed answer made the call tool_choice demanded: at
// least one call for "required", and only calls of the named function for a
// named choice. The error is an *Error with CodeChoiceUnsatisfied.
func (n Narrowed) Verify(calls []Call) error {
	if !n.MustCall() {
		return nil
	}
	if len(calls) == 0 {
		return &Error{code: CodeChoiceUnsatisfied, Param: "tool_choice",
			Message: fmt.Sprintf("tool_choice %s demanded a tool call, but the model made none", n.Choice.Mode)}
	}
	if n.Choice.Mode == ChoiceFunction {
		for _, c := range calls {
			if c.Name != n.Choice.Name {
				return &Error{code: CodeChoiceUnsatisfied, Param: "tool_choice",
					Message: fmt.Sprintf("tool_choice demanded a call of %q, but the model called %q", n.Choice.Name, c.Name)}
			}
		}
	}
	return nil
}
