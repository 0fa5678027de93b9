package templates

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// template is one parsed and checked chat template, ready to render many
// times and safe for concurrent use. Chat holds a model's templates.
type template struct {
	source  string // as given
	root    *nodes.Template
	limits  Limits
	globals *scope
}

// loadTemplate parses a chat template with gonja's parser and checks that
// Prism's evaluator covers every construct it uses. Any failure is a
// *TemplateError of Phase "parse" with the line of source it concerns;
// a construct the evaluator does not cover, or one the sandbox refuses
// (include, import, extends, ...), also names the construct.
func loadTemplate(source string, limits Limits) (*template, error) {
	if err := checkSource(source); err != nil {
		return nil, &TemplateError{Phase: "parse", Message: err.Error(), Err: err}
	}
	rw := rewrite(source)
	root, err := parseSafely(rw.text)
	var u *unsupported
	switch {
	case errors.As(err, &u):
		return nil, refusal(rw, u)
	case err != nil:
		return nil, parseError(rw, err)
	}
	if u := check(root); u != nil {
		return nil, refusal(rw, u)
	}
	return &template{source: source, root: root, limits: limits, globals: &scope{vars: globalFuncs()}}, nil
}

// rewrite applies the environment's whitespace rules and hoists the
// conditionals gonja's parser cannot read (see conditional.go).
func rewrite(source string) *rewritten {
	text, maps := preprocess(source)
	text, _, m := hoistConditionals(text)
	return &rewritten{original: source, text: text, maps: append(maps, m)}
}

// parseConfig is the parser's configuration: preprocess has applied
// trim_blocks, lstrip_blocks and the trailing newline rule, so gonja must
// not apply its own on top.
func parseConfig() *config.Config {
	cfg := config.New()
	cfg.TrimBlocks = false
	cfg.LeftStripBlocks = false
	cfg.KeepTrailingNewline = true
	cfg.AutoEscape = false
	return cfg
}

// templateName is the name the template has inside the parser; no other
// template can be named, since the statements that would load one are
// refused.
const templateName = "chat_template"

func parseSafely(src string) (root *nodes.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("template parser failed: %v", r)
		}
	}()
	cfg := parseConfig()
	return parser.NewParser(templateName, tokens.LexAll(src, cfg), cfg, nil, statements()).Parse()
}

func refusal(rw *rewritten, u *unsupported) *TemplateError {
	return &TemplateError{Phase: "parse", Construct: u.construct, Line: rw.line(u.pos), Message: u.Error(), Err: u}
}

// parseError turns the parser's error into a TemplateError whose line and
// text refer to the source as given, not to its rewrite.
func parseError(rw *rewritten, err error) *TemplateError {
	te := &TemplateError{Phase: "parse", Message: err.Error(), Err: err}
	var se *parser.SyntaxError
	if errors.As(err, &se) {
		te.Line = rw.line(rw.offset(se.Line, se.Column))
		near := se.Message
		if se.Raw != "" {
			near += fmt.Sprintf(" (near %q)", se.Raw)
		}
		te.Message = strings.Replace(err.Error(), se.Error(), near, 1)
	}
	if len(te.Message) > 500 {
		te.Message = te.Message[:500] + "..."
	}
	return te
}

// render renders the template with exactly in: no template choice, no
// special tokens filled in, no fallback (Chat.Render adds those). A
// template that raises fails with a *TemplateError whose Raised is true;
// one stopped by the sandbox with a *LimitError; any other failure with a
// *TemplateError.
func (t *template) render(ctx context.Context, in Input) (prompt string, err error) {
	if err := ctx.Err(); err != nil {
		return "", &LimitError{Limit: "deadline", Detail: err.Error(), Err: err}
	}
	if t.limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.limits.Timeout)
		defer cancel()
	}
	b := &budget{ctx: ctx, limits: t.limits}
	data, err := contextData(in, b)
	if err != nil {
		return "", &TemplateError{Phase: "render", Message: err.Error(), Err: err}
	}
	var sb strings.Builder
	sb.Grow(sizeHint(&in, t.limits.MaxOutputBytes))
	defer func() {
		if r := recover(); r != nil {
			prompt, err = "", &TemplateError{Phase: "render", Message: fmt.Sprintf("the renderer failed: %v", r)}
		}
	}()
	r := &run{b: b, out: &output{sb: &sb, b: b}, filters: filterSet}
	execErr := r.execAll(t.root.Nodes, &scope{vars: data, parent: t.globals})
	switch {
	case b.raised != nil:
		return "", b.raised
	case b.err != nil:
		return "", b.err
	case execErr != nil:
		return "", &TemplateError{Phase: "render", Message: execErr.Error(), Err: execErr}
	}
	if err := ctx.Err(); err != nil {
		return "", &LimitError{Limit: "deadline", Detail: err.Error(), Err: err}
	}
	return sb.String(), nil
}

// contextData is the set of variables the template renders with, as
// apply_chat_template passes them.
func contextData(in Input, b *budget) (map[string]any, error) {
	data := make(map[string]any, 8+len(in.Extra))
	for k, v := range in.Extra {
		tv, err := toTemplateValue(v, b)
		if err != nil {
			return nil, fmt.Errorf("extra variable %s: %w", k, err)
		}
		data[k] = tv
	}
	msgs := make([]any, len(in.Messages))
	for i := range in.Messages {
		o, err := in.Messages[i].toValue(b)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msgs[i] = o
	}
	data["messages"] = msgs
	if in.Tools != nil {
		tools := make([]any, len(in.Tools))
		for i, raw := range in.Tools {
			v, err := decodeJSON(raw, b)
			if err != nil {
				return nil, fmt.Errorf("tool %d: %w", i, err)
			}
			tools[i] = v
		}
		data["tools"] = tools
	} else {
		data["tools"] = nil
	}
	data["add_generation_prompt"] = in.AddGenerationPrompt
	data["bos_token"] = in.BOSToken
	data["eos_token"] = in.EOSToken
	return data, nil
}

// sizeHint guesses the prompt's size from the input, so the output buffer
// is allocated about once.
func sizeHint(in *Input, limit int) int {
	n := 512
	for i := range in.Messages {
		m := &in.Messages[i]
		n += 64 + len(m.Content.text)
		for _, p := range m.Content.parts {
			n += len(p)
		}
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.Function.Arguments)
		}
		if m.ReasoningContent != nil {
			n += len(*m.ReasoningContent)
		}
	}
	for _, tool := range in.Tools {
		n += len(tool) + len(tool)/8
	}
	return min(n, limit)
}
