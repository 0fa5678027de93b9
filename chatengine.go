package prism

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/tools"
)

// EngineChat answers chat requests with the engine, through a Manager:
// it renders the model's chat template (tools narrowed by tool_choice),
// compiles what the answer must follow (response_format, a demanded or
// offered call) against the model's vocabulary, waits for the model, and
// reads the stream through the reasoning splitter and the tool-call
// parser. The model names it takes are ModelKey's; the Manager's loader
// should be Models.Loader of the same Models, so the tokenizer is loaded
// once per folder.
type EngineChat struct {
	mgr    *engine.Manager
	models *Models
	log    *slog.Logger
}

// NewEngineChat returns the chat layer over mgr, reading the folders'
// text side from models (nil for a cache of its own). Only WithLogger of
// opts applies.
func NewEngineChat(mgr *engine.Manager, models *Models, opts ...Option) *EngineChat {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	log := cfg.logger
	if log == nil {
		log = slog.Default()
	}
	if models == nil {
		models = NewModels(log)
	}
	return &EngineChat{mgr: mgr, models: models, log: log}
}

// Models returns the cache of the folders' text side the chat reads.
func (c *EngineChat) Models() *Models { return c.models }

// chatPlan is a request resolved up to the generation: everything that
// can fail before the first event has been checked.
type chatPlan struct {
	key       string
	prompt    string // the rendered prompt
	forced    string // text forced at the start of the answer (tool_choice)
	format    tools.Format
	reasonOpt []reasoning.Option
	narrowed  tools.Narrowed
	parallel  bool
	// allowRepeats lets the answer go on after a call that repeats an
	// earlier one (ChatRequest.AllowRepeatedCalls).
	allowRepeats bool
	req          engine.Request
	fallback     error
	nullEmpty    []int
}

// Render returns the prompt the engine would generate from for req (the
// forced opening of a demanded call included) and the template's fallback
// cause, nil when the model's own template rendered it. It checks
// everything ChatStream checks before waiting for the model.
func (c *EngineChat) Render(ctx context.Context, model string, req ChatRequest) (prompt string, fallback error, err error) {
	p, err := c.plan(ctx, model, &req)
	if err != nil {
		return "", nil, requestError(err)
	}
	return p.req.Prompt, p.fallback, nil
}

// plan renders the prompt, compiles the constraint and builds the engine
// request.
func (c *EngineChat) plan(ctx context.Context, model string, req *ChatRequest) (*chatPlan, error) {
	dir, _ := SplitModelKey(model)
	chat, err := c.models.Templates(dir)
	if err != nil {
		return nil, err
	}
	format := tools.DetectFormat(chat.Source(true))
	raw, err := req.rawTools()
	if err != nil {
		return nil, err
	}
	narrowed, err := tools.Narrow(req.ToolChoice.raw(), raw, format)
	if err != nil {
		return nil, err
	}
	in, err := req.templateInput(narrowed.Tools, func() bool { return c.models.objectArguments(ctx, dir, chat) })
	if err != nil {
		return nil, err
	}
	prompt, err := chat.Render(ctx, in)
	if err != nil {
		return nil, err
	}
	if prompt.NullAsEmpty != nil {
		c.log.Warn("chat template fails on null message content; rendered it as an empty string", "model", dir, "messages", prompt.NullAsEmpty)
	}
	source := chat.Source(len(narrowed.Tools) > 0)
	p := &chatPlan{key: model, prompt: prompt.Text, format: format, narrowed: narrowed,
		reasonOpt: reasoning.ForTemplate(source), parallel: !req.SerialToolCalls, nullEmpty: prompt.NullAsEmpty,
		allowRepeats: req.AllowRepeatedCalls}
	if prompt.Fallback {
		p.fallback = prompt.FallbackCause
		c.log.Warn("chat template replaced by the built-in format", "model", dir, "cause", prompt.FallbackCause)
	}
	open, until := reasoning.AnswerStart(p.prompt, source, p.reasonOpt...)
	if len(narrowed.Tools) > 0 {
		open, until = reasoning.CallStart(p.prompt, source, p.reasonOpt...)
	}
	if narrowed.MustCall() && !callAfterReasoning(narrowed, until) {
		p.forced = narrowed.ForcedAfter(p.prompt, p.reasonOpt...)
	}
	p.req = req.engineRequest(p.prompt + p.forced)
	// Harmony's channel and call markers are special tokens, which the
	// reasoning splitter and the tool-call parser read in the text.
	p.req.KeepSpecial = format == tools.FormatHarmony
	p.req.Constraint, err = c.constraint(constraintInput{dir: dir, format: req.ResponseFormat, narrowed: narrowed,
		parallel: p.parallel, open: open, until: until})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ChatStream answers req with the model (a ModelKey). It returns once the
// model is generating: an error before that (template, constraint, queue,
// load, context length) is returned with no event produced (spec I3). A
// caller whose ctx ends leaves the Manager's queue at once.
func (c *EngineChat) ChatStream(ctx context.Context, model string, req ChatRequest) (*ChatStream, error) {
	p, err := c.plan(ctx, model, &req)
	if err != nil {
		return nil, requestError(err)
	}
	lease, err := c.mgr.Use(ctx, p.key, func() bool { return ctx.Err() == nil })
	if err != nil {
		return nil, err
	}
	st, err := lease.Engine().Stream(ctx, p.req)
	if err != nil {
		lease.Release()
		return nil, err
	}
	g := newEngineSource(p, st, lease)
	if p.req.Logprobs {
		g.trail = newTrail(lease.Engine().Tokenizer(), p.forced)
		g.trail.match(g.events, g.parser.Held())
	}
	return &ChatStream{src: g, Prompt: p.req.Prompt, TemplateFallback: p.fallback, NullAsEmpty: p.nullEmpty}, nil
}

// engineSource reads an engine stream through the tool-call parser
// (reasoning split first).
type engineSource struct {
	p      *chatPlan
	st     *engine.Stream
	lease  *engine.Lease
	parser *tools.StreamParser
	events []tools.Event
	first  bool // the forced text's events are still to be sent
	ended  int  // calls whose end event went out
	// reasoningTokens counts the generated tokens that were thinking: fed
	// inside a think block or opening or closing one.
	reasoningTokens int
	trail           *trail // logprobs: the tokens behind the content, or nil
	closed          bool
	calls           repeats // the answer's calls, to stop at a repeated one
	checked         int     // completed calls checked for a repeat
	stopped         string  // the warning of a stop at a repeated call
}

func newEngineSource(p *chatPlan, st *engine.Stream, lease *engine.Lease) *engineSource {
	opts := append([]reasoning.Option{reasoning.WithPrompt(p.prompt + p.forced)}, p.reasonOpt...)
	g := &engineSource{p: p, st: st, lease: lease, parser: tools.NewStreamParser(p.format, tools.WithReasoning(opts...))}
	if p.forced != "" {
		g.events = g.parser.Feed(g.events, p.forced)
		g.first = len(g.events) > 0
		g.calls.see(g.events)
	}
	return g
}

// stopAtRepeat reports whether a call completed by now repeats an earlier
// one of the answer, and keeps the warning that says so.
func (g *engineSource) stopAtRepeat() bool {
	g.calls.see(g.events)
	for ; g.checked < g.parser.Completed(); g.checked++ {
		if j := g.calls.repeated(g.checked); j >= 0 {
			g.stopped = repeatWarning(g.checked, j, g.calls.calls[j].name)
			return true
		}
	}
	return false
}

// out turns the step's parser events into the layer's, with the end of
// each call completed by now and the step's logprobs.
func (g *engineSource) out(dst []Event) []Event {
	dst = fromTools(dst, g.events)
	for ; g.ended < g.parser.Completed(); g.ended++ {
		dst = append(dst, Event{Kind: EventToolCallEnd, Call: CallEvent{Index: g.ended}})
	}
	if g.stopped != "" {
		// Index -1: the warning abandons no call; the repeat stays, as sent.
		dst = append(dst, Event{Kind: EventWarning, Text: g.stopped, Call: CallEvent{Index: -1}})
		g.stopped = ""
	}
	if g.trail != nil {
		dst = append(dst, Event{Kind: EventLogprobs, Logprobs: g.trail.take()})
	}
	return dst
}

func (g *engineSource) step(dst []Event) ([]Event, bool) {
	if g.first {
		g.first = false
		return g.out(dst), true
	}
	for !g.closed && g.st.Next() {
		tok := g.st.Token()
		if g.trail != nil {
			g.trail.push(tok)
		}
		thinking := g.parser.InReasoning()
		g.events = g.parser.Feed(g.events[:0], tok.Text())
		if thinking || g.parser.InReasoning() {
			g.reasoningTokens++
		}
		if g.trail != nil {
			g.trail.match(g.events, g.parser.Held())
		}
		if !g.p.parallel && g.parser.Completed() > 0 {
			_ = g.st.Close() // parallel tool calls off: the first call ends the answer
			g.closed = true
		}
		if !g.p.allowRepeats && g.stopAtRepeat() {
			_ = g.st.Close()
			g.closed = true
		}
		if len(g.events) > 0 {
			return g.out(dst), true
		}
	}
	if g.st.Result().FinishReason == engine.FinishLength {
		g.events = g.parser.Cut(g.events[:0]) // a call cut short stays a call
	} else {
		g.events = g.parser.Flush(g.events[:0])
	}
	if g.trail != nil {
		g.trail.match(g.events, g.parser.Held())
		g.trail.finish()
	}
	return g.out(dst), false
}

func (g *engineSource) err() error { return g.st.Err() }

func (g *engineSource) finish() FinishReason {
	res := g.st.Result()
	if res.FinishReason == engine.FinishLength && (len(g.parser.Abandoned()) > 0 || g.parser.Partial() >= 0) {
		return FinishLength // a call was cut: its start went out, it never ended
	}
	if g.parser.Completed() > 0 {
		return FinishToolCalls
	}
	if res.FinishReason == engine.FinishLength {
		return FinishLength
	}
	return FinishStop
}

func (g *engineSource) usage() Usage         { return usageOf(g.st.Result().Usage, g.reasoningTokens) }
func (g *engineSource) reasoningSeen() bool  { return g.parser.ReasoningSeen() }
func (g *engineSource) stats() engine.Result { return g.st.Result() }

func (g *engineSource) close() error {
	if g.lease == nil {
		return nil
	}
	// Close first: a stream its reader left has no Result until it is
	// closed, and its tokens count all the same.
	err := g.st.Close()
	g.lease.Release()
	g.lease = nil
	return err
}

// constraintInput is what the constraint of a chat answer depends on.
type constraintInput struct {
	dir      string
	format   ResponseFormat
	narrowed tools.Narrowed
	parallel bool
	// open and until leave the model's reasoning free before the
	// constrained answer (reasoning.AnswerStart; CallStart with tools).
	open, until string
}

// constraint compiles what a chat answer must follow for the model in
// dir: the response format, the calls tool_choice demands, or, with tools
// offered under auto, a lazy grammar that constrains a call from its
// opening on; nil when the answer is free. It runs before the model is
// used, so a schema that cannot be enforced fails before any event (spec
// I3). docs/structured-outputs.md describes the combinations.
func (c *EngineChat) constraint(in constraintInput) (engine.Constraint, error) {
	wantsFormat := in.format.Type != FormatText
	if len(in.narrowed.Tools) == 0 {
		if !wantsFormat {
			return nil, nil
		}
		return c.formatConstraint(in)
	}
	sx, ok := in.narrowed.Format.Syntax()
	if !ok {
		if wantsFormat {
			return nil, unsupported("response_format",
				"response_format together with tools is not served for the %s tool-call format: send one or the other", in.narrowed.Format)
		}
		return nil, nil // no known call syntax: calls cannot be constrained (docs/structured-outputs.md)
	}
	comp, err := c.models.Compiler(in.dir)
	if err != nil {
		return nil, err
	}
	ts, err := grammarTools(in.narrowed)
	if err != nil {
		return nil, err
	}
	o := grammar.CallOptions{Syntax: callSyntax(sx), Parallel: in.parallel}
	if in.narrowed.MustCall() {
		// A demanded call has no content, so response_format does not
		// apply. The grammar writes the call after the model's reasoning,
		// or after the opening forced into the prompt.
		if callAfterReasoning(in.narrowed, in.until) {
			o.AfterOpen, o.After = in.open, in.until
		} else {
			o.Written = in.narrowed.Forced
		}
	} else {
		o.Lazy = true
		if in.narrowed.Format != tools.FormatHarmony || wantsFormat {
			// Harmony's free text holds its analysis messages already;
			// with a response format the answer is the value or calls, so
			// the analysis message is left free before them.
			o.AfterOpen, o.After = in.open, in.until
		}
		if wantsFormat {
			o.Content, o.ContentParam = []byte(`{"type":"object"}`), "response_format"
			if in.format.Type == FormatJSONSchema {
				o.Content, o.ContentParam = in.format.Schema, "response_format.json_schema.schema"
			}
		}
	}
	g, err := comp.ToolCalls(ts, o)
	if err != nil {
		return nil, err
	}
	for _, w := range g.Warnings() {
		c.log.Warn("tool parameters keyword not enforced (send function.strict true to refuse it)", "warning", w.String())
	}
	return g, nil
}

// callSyntax is the grammar's copy of a format's call syntax.
func callSyntax(sx tools.Syntax) grammar.CallSyntax {
	return grammar.CallSyntax{Trigger: sx.Trigger, Begin: sx.Begin, End: sx.End, Open: sx.Open, Close: sx.Close, Sep: sx.Sep,
		ArgsKey: sx.ArgsKey, WholeAnswer: sx.WholeAnswer, Tokens: sx.Tokens, NameEnd: sx.NameEnd, Guard: sx.Guard, ContentBegin: sx.ContentBegin}
}

// formatConstraint compiles the response format alone.
func (c *EngineChat) formatConstraint(in constraintInput) (engine.Constraint, error) {
	comp, err := c.models.Compiler(in.dir)
	if err != nil {
		return nil, err
	}
	o := grammar.Options{AfterOpen: in.open, After: in.until}
	if in.format.Type == FormatJSONObject {
		g, err := comp.JSONObject(o)
		if err != nil {
			return nil, fmt.Errorf("json mode: %w", err)
		}
		return g, nil
	}
	o.Strict, o.Param = true, "response_format.json_schema.schema"
	return comp.Schema(in.format.Schema, o)
}

// callAfterReasoning reports whether a call that tool_choice demands is
// left to the grammar, after the reasoning the model may write first
// (until, from reasoning.CallStart), instead of forcing its opening into
// the prompt, which would leave no room to think. It needs a grammar for
// the call format.
func callAfterReasoning(n tools.Narrowed, until string) bool {
	if until == "" {
		return false
	}
	_, ok := n.Format.Syntax()
	return ok
}

// grammarTools reads the offered tools' names, parameter schemas and
// strict flags. A tool's schema compiles strict only when its function
// says strict: true; otherwise what the grammar cannot enforce is logged
// and left out.
func grammarTools(n tools.Narrowed) ([]grammar.Tool, error) {
	out := make([]grammar.Tool, len(n.Tools))
	for i, raw := range n.Tools {
		var t struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Strict     *bool           `json:"strict"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, invalid("tools", "tools[%d]: %v", i, err)
		}
		param := fmt.Sprintf("tools[%d].function.parameters", i)
		if n.Choice.Mode == tools.ChoiceFunction {
			param = "tools" // narrowed to the named tool: its index is not kept
		}
		params := t.Function.Parameters
		if string(params) == "null" {
			params = nil
		}
		out[i] = grammar.Tool{Name: t.Function.Name, Parameters: params, Strict: t.Function.Strict != nil && *t.Function.Strict, Param: param}
	}
	return out, nil
}
