package templates

import (
	"context"
	"errors"
	"log/slog"
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
}

// RenderPrompt renders in with the model's template, applying the spec's
// rule for failures (I7, P11):
//
//   - the template renders: its text;
//   - it fails, is blocked, or the model has none (tmpl nil), and in has no
//     tools: the failure is logged with the model id and the cause, and the
//     built-in format renders the conversation (Prompt.Fallback is set so
//     the caller can report it);
//   - it fails with tools (at least one): a *TemplateRenderError (code
//     template_render_failed) naming the model and the cause, because the
//     built-in format has no place for tools.
//
// A context that ends is returned as its own error, never hidden by the
// fallback. logger may be nil (slog.Default is used).
func RenderPrompt(ctx context.Context, tmpl *Template, modelID string, in Input, logger *slog.Logger) (Prompt, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var err error
	if tmpl == nil {
		err = ErrNoTemplate
	} else {
		var text string
		text, err = tmpl.Render(ctx, in)
		if err == nil {
			return Prompt{Text: text}, nil
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Prompt{}, ctxErr
	}
	if len(in.Tools) > 0 {
		logger.LogAttrs(ctx, slog.LevelWarn, "chat template failed on a request with tools",
			slog.String("model", modelID), slog.String("cause", err.Error()))
		return Prompt{}, &TemplateRenderError{Model: modelID, Err: err}
	}
	logger.LogAttrs(ctx, slog.LevelWarn, "chat template failed; using the built-in format",
		slog.String("model", modelID), slog.String("cause", err.Error()), slog.Bool("blocked", isLimit(err)))
	return Prompt{Text: BuiltinFormat(in), Fallback: true, FallbackCause: err}, nil
}

func isLimit(err error) bool {
	var le *LimitError
	return errors.As(err, &le)
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
// which is why RenderPrompt never uses it for a request with tools.
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
