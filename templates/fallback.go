package templates

import (
	"strings"
)

// Prompt is a rendered prompt and how it was made.
type Prompt struct {
	// Text is the prompt to tokenize.
	Text string
	// Fallback is true when the built-in format replaced the model's
	// template; FallbackCause then says why.
	Fallback bool
	// FallbackCause is the template's failure (nil without fallback).
	FallbackCause error
	// NullAsEmpty lists the messages (indexes into Input.Messages) whose
	// null content the template was given as "" instead: it failed on the
	// input as sent and rendered with those contents "". Nil when the
	// template rendered the input as sent, or did not render at all.
	NullAsEmpty []int
}

// BuiltinFormat renders a conversation in Prism's built-in format, the
// ChatML layout most instruction-tuned models understand:
//
//	<|im_start|>role
//	content<|im_end|>
//
// one block per message, content parts joined as text, tool calls written
// as JSON lines, and "<|im_start|>assistant\n" at the end when a
// generation prompt is asked for. It has no place for tool definitions,
// which is why Chat.Render never uses it for a request with tools.
func BuiltinFormat(in Input) string {
	var sb strings.Builder
	for i := range in.Messages {
		m := &in.Messages[i]
		sb.WriteString("<|im_start|>")
		sb.WriteString(m.Role)
		sb.WriteByte('\n')
		sb.WriteString(m.Content.String())
		for _, tc := range m.ToolCalls {
			if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
				sb.WriteByte('\n')
			}
			sb.WriteString(`{"name": `)
			writeJSONString(&sb, tc.Function.Name, false)
			sb.WriteString(`, "arguments": `)
			if len(tc.Function.Arguments) > 0 {
				sb.Write(tc.Function.Arguments)
			} else {
				sb.WriteString("{}")
			}
			sb.WriteByte('}')
		}
		sb.WriteString("<|im_end|>\n")
	}
	if in.AddGenerationPrompt {
		sb.WriteString("<|im_start|>assistant\n")
	}
	return sb.String()
}
