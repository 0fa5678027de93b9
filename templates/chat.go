package templates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// Chat turns conversations into prompts for one model. It is built once
// per model (NewChat) and safe for concurrent use; its Render is the one
// way to render a prompt: it picks the model's template for the request,
// fills the model's special tokens, renders in the sandbox, and applies
// the spec's rule for failures (I7, P11).
type Chat struct {
	model    string
	named    map[string]*chatTemplate // "default", "tool_use"
	bos, eos string
	logger   *slog.Logger
}

// chatTemplate is one of the model's templates: loaded, or refused when
// it was loaded.
type chatTemplate struct {
	t   *template
	err error // *TemplateError: why the template was refused
}

// Option configures NewChat.
type Option func(*options)

type options struct {
	limits Limits
	logger *slog.Logger
}

func newOptions(opts []Option) options {
	o := options{limits: DefaultLimits(), logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithLimits replaces the sandbox bounds (DefaultLimits otherwise). Zero
// fields keep their defaults.
func WithLimits(l Limits) Option {
	return func(o *options) {
		d := DefaultLimits()
		if l.MaxOutputBytes > 0 {
			d.MaxOutputBytes = l.MaxOutputBytes
		}
		if l.MaxSteps > 0 {
			d.MaxSteps = l.MaxSteps
		}
		if l.MaxCallDepth > 0 {
			d.MaxCallDepth = l.MaxCallDepth
		}
		if l.MaxRange > 0 {
			d.MaxRange = l.MaxRange
		}
		if l.Timeout > 0 {
			d.Timeout = l.Timeout
		}
		o.limits = d
	}
}

// WithLogger sets where template failures and fallbacks are logged
// (slog.Default otherwise).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// NewChat builds the Chat of the model named model (the id logs and
// errors name) from the chat templates and special tokens its folder
// declares (ReadTokenizerConfig reads them).
//
// Each template is parsed and checked when the Chat is built. A template
// that does not parse, or uses a construct Prism's evaluator does not
// cover or the sandbox refuses, is not an error here: as the spec has it
// for any template that fails (I7), it is logged, requests without tools
// get the built-in format and requests with tools a *TemplateRenderError
// (P11). Err reports it.
func NewChat(model string, src ChatTemplates, opts ...Option) *Chat {
	o := newOptions(opts)
	c := &Chat{model: model, named: map[string]*chatTemplate{}, bos: src.BOSToken, eos: src.EOSToken, logger: o.logger}
	for _, name := range []string{"default", "tool_use"} {
		source, ok := src.Named[name]
		if !ok {
			continue
		}
		t, err := loadTemplate(source, o.limits)
		c.named[name] = &chatTemplate{t: t, err: err}
		if err != nil {
			o.logger.Warn("chat template refused; requests without tools will use the built-in format, requests with tools fail",
				"model", model, "template", name, "cause", err.Error())
		}
	}
	if len(c.named) == 0 {
		o.logger.Warn("the model has no chat template; requests without tools will use the built-in format, requests with tools fail",
			"model", model)
	}
	return c
}

// pick returns the template for a request with or without tools:
// tool_use for a request with tools when the model names one, otherwise
// default (tool_use again for a model that has only that one), nil when
// the model has none. The choice is by name, as transformers makes it; a
// refused template is not replaced by the other.
func (c *Chat) pick(withTools bool) *chatTemplate {
	if t, ok := c.named["tool_use"]; ok && withTools {
		return t
	}
	if t, ok := c.named["default"]; ok {
		return t
	}
	return c.named["tool_use"]
}

// Source returns the source of the template that renders a request with
// or without tools, "" when the model has none (tools.DetectFormat and
// SupportsTools read it).
func (c *Chat) Source(withTools bool) string {
	if t := c.pick(withTools); t != nil && t.t != nil {
		return t.t.source
	}
	return ""
}

// Err reports why the model's templates were refused when the Chat was
// built (each a *TemplateError with the line and, for an unsupported
// construct, its name), or nil when every template it has loaded.
func (c *Chat) Err() error {
	var errs []error
	for _, name := range []string{"default", "tool_use"} {
		if t, ok := c.named[name]; ok && t.err != nil {
			errs = append(errs, fmt.Errorf("%s chat template: %w", name, t.err))
		}
	}
	return errors.Join(errs...)
}

// Render renders in into the model's prompt. BOSToken and EOSToken are
// filled from the model's configuration where in leaves them empty. Then:
//
//   - the template renders: its text;
//   - the template fails (it is not blocked by the sandbox) and in has
//     messages whose content is null: in is rendered once more with ""
//     in place of each, and if that renders, its text is the prompt,
//     Prompt.NullAsEmpty lists those messages, and it is logged. Many
//     templates use an assistant message's content as a string, which
//     the null content beside tool calls fails, as it fails under Jinja.
//     Otherwise the first failure stands, as below;
//   - in has no tools and the template fails, is blocked by the sandbox,
//     was refused when the Chat was built, or the model has none: the
//     built-in format (BuiltinFormat) renders the conversation, and
//     Prompt.Fallback and Prompt.FallbackCause say so; a failure at
//     render time is also logged with the model id and the cause;
//   - in has tools (at least one) and any of those: a *TemplateRenderError
//     (code template_render_failed) naming the model and the cause,
//     because the built-in format has no place for tools.
//
// A context that ends is returned as its own error, never hidden by the
// fallback.
func (c *Chat) Render(ctx context.Context, in Input) (Prompt, error) {
	if in.BOSToken == "" {
		in.BOSToken = c.bos
	}
	if in.EOSToken == "" {
		in.EOSToken = c.eos
	}
	t := c.pick(len(in.Tools) > 0)
	var err error
	switch {
	case t == nil:
		err = ErrNoTemplate
	case t.err != nil:
		err = t.err
	default:
		var text string
		if text, err = t.t.render(ctx, in); err == nil {
			return Prompt{Text: text}, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Prompt{}, ctxErr
		}
		if p, ok := c.renderNullAsEmpty(ctx, t.t, in, err); ok {
			return p, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Prompt{}, ctxErr
		}
		c.logger.LogAttrs(ctx, slog.LevelWarn, "chat template failed",
			slog.String("model", c.model), slog.String("cause", err.Error()),
			slog.Bool("blocked", isLimit(err)), slog.Bool("tools", len(in.Tools) > 0))
	}
	if len(in.Tools) > 0 {
		return Prompt{}, &TemplateRenderError{Model: c.model, Err: err}
	}
	return Prompt{Text: BuiltinFormat(in), Fallback: true, FallbackCause: err}, nil
}

// renderNullAsEmpty renders in again with "" in place of every null
// content, after the first render failed with cause. A render the sandbox
// stopped is not tried again: a null content does not make a template run
// long, and a second try would double what one request may spend.
func (c *Chat) renderNullAsEmpty(ctx context.Context, t *template, in Input, cause error) (Prompt, bool) {
	if isLimit(cause) {
		return Prompt{}, false
	}
	var nulls []int
	for i, m := range in.Messages {
		if m.Content.IsNull() {
			nulls = append(nulls, i)
		}
	}
	if nulls == nil {
		return Prompt{}, false
	}
	retry := in
	retry.Messages = slices.Clone(in.Messages)
	for _, i := range nulls {
		retry.Messages[i].Content = Text("")
	}
	text, err := t.render(ctx, retry)
	if err != nil {
		return Prompt{}, false
	}
	c.logger.LogAttrs(ctx, slog.LevelWarn, "chat template failed on null message content; rendered it as an empty string",
		slog.String("model", c.model), slog.String("cause", cause.Error()), slog.Any("messages", nulls))
	return Prompt{Text: text, NullAsEmpty: nulls}, true
}

func isLimit(err error) bool {
	var le *LimitError
	return errors.As(err, &le)
}
