package templates

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// Template is a parsed chat template, ready to render many times and
// safe for concurrent use.
type Template struct {
	source string // as given
	tpl    *exec.Template
	limits Limits
	// native is true when Prism's evaluator covers every construct the
	// template uses; otherwise gonja's renderer renders it.
	native  bool
	globals *scope
}

// Option configures New.
type Option func(*options)

type options struct {
	limits    Limits
	gonjaOnly bool // tests: render with gonja's renderer
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

// templateName is the name the template has inside the engine; any other
// name a template asks for (include, import, extends) is refused.
const templateName = "chat_template"

// New parses a chat template. A template that does not parse, or uses a
// statement the sandbox leaves out (include, import, extends, ...),
// fails with a *TemplateError of Phase "parse".
func New(source string, opts ...Option) (*Template, error) {
	o := options{limits: DefaultLimits()}
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkSource(source); err != nil {
		return nil, &TemplateError{Phase: "parse", Message: err.Error(), Err: err}
	}
	rewritten, _ := hoistConditionals(preprocess(source))
	cfg := config.New()
	// preprocess has applied trim_blocks, lstrip_blocks and the trailing
	// newline rule; the engine must not apply its own on top.
	cfg.TrimBlocks = false
	cfg.LeftStripBlocks = false
	cfg.KeepTrailingNewline = true
	cfg.AutoEscape = false
	env := &exec.Environment{
		Context:           exec.NewContext(globals()),
		Filters:           filters(),
		Tests:             exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests),
		ControlStructures: statements(),
		Methods:           methods(),
	}
	tpl, err := parseSafely(rewritten, cfg, env)
	if err != nil {
		return nil, &TemplateError{Phase: "parse", Message: cleanMessage(err), Err: err}
	}
	guardTree(tpl.Root())
	t := &Template{source: source, tpl: tpl, limits: o.limits, globals: &scope{vars: globalFuncs()}}
	t.native = compiles(tpl.Root()) && !o.gonjaOnly
	if !t.native && hasRecursiveLoop(tpl.Root().Nodes) {
		err := errors.New("a recursive loop is only supported in templates Prism's evaluator covers entirely")
		return nil, &TemplateError{Phase: "parse", Message: err.Error(), Err: err}
	}
	return t, nil
}

func parseSafely(src string, cfg *config.Config, env *exec.Environment) (tpl *exec.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("template parser failed: %v", r)
		}
	}()
	return exec.NewTemplate(templateName, cfg, sourceLoader{src: src}, env)
}

// Source returns the template text as given to New.
func (t *Template) Source() string { return t.source }

// Render renders the template with in. A template that raises fails with
// a *TemplateError whose Raised is true; one stopped by the sandbox with a
// *LimitError; any other failure with a *TemplateError.
func (t *Template) Render(ctx context.Context, in Input) (prompt string, err error) {
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
	w := &output{sb: &sb, b: b}
	defer func() {
		if r := recover(); r != nil {
			prompt, err = "", &TemplateError{Phase: "render", Message: fmt.Sprintf("the renderer failed: %v", r)}
		}
	}()
	var execErr error
	if t.native {
		r := &run{b: b, out: w, filters: filterSet}
		execErr = r.execAll(t.tpl.Root().Nodes, &scope{vars: data, parent: t.globals})
		if execErr == errBreak || execErr == errContinue {
			execErr = fmt.Errorf("%w", execErr)
		}
	} else {
		for k, v := range data {
			data[k] = toGonja(v)
		}
		data[budgetKey] = b
		execErr = t.tpl.Execute(w, exec.NewContext(data))
	}
	switch {
	case b.raised != nil:
		return "", b.raised
	case b.err != nil:
		return "", b.err
	case execErr != nil:
		return "", &TemplateError{Phase: "render", Message: cleanMessage(execErr), Err: execErr}
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

// sourceLoader serves the one template and refuses every other name, so
// include, import and extends cannot read files.
type sourceLoader struct{ src string }

// errNoLoading is the answer to a template asking for another template.
var errNoLoading = errors.New("loading other templates is disabled in the sandbox")

func (l sourceLoader) Read(path string) (io.Reader, error) {
	if path != templateName {
		return nil, fmt.Errorf("%q: %w", path, errNoLoading)
	}
	return strings.NewReader(l.src), nil
}

func (l sourceLoader) Resolve(path string) (string, error) {
	if path != templateName {
		return "", fmt.Errorf("%q: %w", path, errNoLoading)
	}
	return path, nil
}

func (l sourceLoader) Inherit(from string) (loaders.Loader, error) {
	return nil, fmt.Errorf("%q: %w", from, errNoLoading)
}

var wrapNoise = regexp.MustCompile(`(?:unable to execute template|Unable to execute controlStructure at line \d+: [^:]*|Unable to render expression at line \d+: [^:]*): `)

// cleanMessage shortens the engine's nested error text to its cause.
func cleanMessage(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "failed to parse template '"); i >= 0 {
		// The engine quotes the whole source; keep only the reason.
		if j := strings.LastIndex(msg, "': "); j > i {
			msg = msg[j+3:]
		}
	}
	msg = wrapNoise.ReplaceAllString(msg, "")
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	return msg
}

// withGonjaRenderer makes the template render with gonja's renderer even
// when Prism's evaluator covers it (tests compare both paths).
func withGonjaRenderer() Option { return func(o *options) { o.gonjaOnly = true } }

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
