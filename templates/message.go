package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Input is everything a chat template sees when it renders one prompt.
type Input struct {
	// Messages is the conversation, oldest first.
	Messages []Message `json:"messages"`
	// Tools are the tool definitions offered to the model, each exactly as
	// the caller sent it (typically {"type":"function","function":{...}}).
	// Their JSON key order is kept all the way into the prompt. Nil means
	// no tools: the template sees tools as none.
	Tools []json.RawMessage `json:"tools"`
	// AddGenerationPrompt asks the template to open the assistant turn.
	AddGenerationPrompt bool `json:"add_generation_prompt,omitempty"`
	// BOSToken and EOSToken are the tokenizer's special tokens, visible to
	// the template as bos_token and eos_token. Left empty, Chat.Render
	// fills them from the model's configuration.
	BOSToken string `json:"bos_token,omitempty"`
	EOSToken string `json:"eos_token,omitempty"`
	// Extra holds further template variables such as enable_thinking. A
	// value may be a Go string, bool, number, nil, or a json.RawMessage,
	// which is decoded with its key order kept.
	Extra map[string]any `json:"extra,omitempty"`
}

// Message is one chat message. Only the fields that are set reach the
// template: an unset field is absent from the message mapping, exactly as
// a key the caller did not send.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the message text, a list of parts, null, or absent.
	Content Content `json:"content,omitzero"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message (or a participant name).
	Name string `json:"name,omitempty"`
	// ReasoningContent is the assistant's thinking, when the caller keeps
	// it apart from Content. Nil leaves it absent.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// ToolCall is one call an assistant message made.
type ToolCall struct {
	// ID is the call's id; empty leaves it absent.
	ID string `json:"id,omitempty"`
	// Type is normally "function"; empty leaves it absent.
	Type string `json:"type,omitempty"`
	// Function names the function and carries its arguments.
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function part of a ToolCall.
type FunctionCall struct {
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments is raw JSON as the caller sent it: a JSON string (the
	// OpenAI wire form, seen by the template as a string) or a JSON object
	// (seen as a mapping that keeps its key order).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

type contentKind uint8

const (
	contentAbsent contentKind = iota
	contentNull
	contentText
	contentParts
)

// Content is a message's content: text, a list of parts, null, or absent
// (the zero Content).
type Content struct {
	kind  contentKind
	text  string
	parts []json.RawMessage
}

// Text is content that is a plain string.
func Text(s string) Content { return Content{kind: contentText, text: s} }

// Null is content that is JSON null, as an assistant message carrying only
// tool calls usually has.
func Null() Content { return Content{kind: contentNull} }

// Parts is content given as a list of parts, each a JSON object such as
// {"type":"text","text":"hi"}, kept in its key order.
func Parts(parts ...json.RawMessage) Content {
	return Content{kind: contentParts, parts: parts}
}

// TextParts is content given as a list of text parts.
func TextParts(texts ...string) Content {
	parts := make([]json.RawMessage, len(texts))
	for i, t := range texts {
		b, _ := json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", t})
		parts[i] = b
	}
	return Parts(parts...)
}

// IsZero reports whether the content is absent.
func (c Content) IsZero() bool { return c.kind == contentAbsent }

// IsNull reports whether the content is JSON null.
func (c Content) IsNull() bool { return c.kind == contentNull }

// String returns the text of the content: the string itself, or the text
// parts joined, or "" for null and absent content.
func (c Content) String() string {
	switch c.kind {
	case contentText:
		return c.text
	case contentParts:
		var b bytes.Buffer
		for _, p := range c.parts {
			var part struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(p, &part) == nil && part.Type == "text" {
				b.WriteString(part.Text)
			}
		}
		return b.String()
	}
	return ""
}

// MarshalJSON writes the content as a JSON string, array or null.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.kind {
	case contentText:
		return json.Marshal(c.text)
	case contentParts:
		return json.Marshal(c.parts)
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads a JSON string, array of parts or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = Null()
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Text(s)
	case len(b) > 0 && b[0] == '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		*c = Parts(parts...)
	default:
		return errors.New("message content must be a string, an array of parts or null")
	}
	return nil
}

// toValue turns the message into the ordered mapping the template sees.
func (m *Message) toValue(limits *budget) (*omap, error) {
	o := newOmap(6)
	o.put("role", m.Role)
	switch m.Content.kind {
	case contentNull:
		o.put("content", nil)
	case contentText:
		o.put("content", m.Content.text)
	case contentParts:
		parts := make([]any, len(m.Content.parts))
		for i, p := range m.Content.parts {
			v, err := decodeJSON(p, limits)
			if err != nil {
				return nil, fmt.Errorf("message content part %d: %w", i, err)
			}
			parts[i] = v
		}
		o.put("content", parts)
	}
	if m.ToolCalls != nil {
		calls := make([]any, len(m.ToolCalls))
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			call := newOmap(3)
			if tc.ID != "" {
				call.put("id", tc.ID)
			}
			if tc.Type != "" {
				call.put("type", tc.Type)
			}
			fn := newOmap(2)
			fn.put("name", tc.Function.Name)
			if len(tc.Function.Arguments) > 0 {
				args, err := decodeJSON(tc.Function.Arguments, limits)
				if err != nil {
					return nil, fmt.Errorf("tool call %d arguments: %w", i, err)
				}
				fn.put("arguments", args)
			}
			call.put("function", fn)
			calls[i] = call
		}
		o.put("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		o.put("tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		o.put("name", m.Name)
	}
	if m.ReasoningContent != nil {
		o.put("reasoning_content", *m.ReasoningContent)
	}
	return o, nil
}
