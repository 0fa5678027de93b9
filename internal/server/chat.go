package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/sse"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/templates"
	"github.com/prism-local/prism/tools"
)

// chatPlan is a chat request resolved up to the generation: everything that
// can fail before the first byte has been checked.
type chatPlan struct {
	id, model string
	key       string
	prompt    string
	forced    string // text forced at the start of the answer (tool_choice)
	format    tools.Format
	reasonOpt []reasoning.Option
	narrowed  tools.Narrowed
	parallel  bool
	req       engine.Request
	fallback  error
	// nullAsEmpty: the template failed on null message content and
	// rendered with "" in its place (Prompt.NullAsEmpty; the header
	// X-Prism-Null-Content says so).
	nullAsEmpty bool
	trail       *trail // logprobs: the tokens behind the content, or nil
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, err := wire.ReadBody(r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := wire.DecodeChat(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.chatBackend(ctx, req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := "chatcmpl-" + randomHex(12)
	err = b.answer(w, r, req, func(g generation) {
		if req.Stream {
			s.streamChat(w, r, id, req.Model, g, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
			return
		}
		s.wholeChat(w, r, id, req.Model, g)
	})
	if err != nil {
		s.writeError(w, r, err)
	}
}

// generate waits for the engine, starts the plan's generation and hands
// the stream to answer, which writes the response. An error before answer
// runs is returned with nothing written, for the caller to send (spec I3);
// the chat and Responses endpoints share this path.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, plan *chatPlan, answer func(*engine.Stream)) error {
	ctx := r.Context()
	lease, err := s.cfg.Manager.Use(ctx, plan.key, func() bool { return ctx.Err() == nil })
	if err != nil {
		return err
	}
	defer lease.Release()
	st, err := lease.Engine().Stream(ctx, plan.req)
	if err != nil {
		return err
	}
	defer func() {
		// Close first: a stream its client left (a failed write) has no
		// Result until it is closed, and its tokens count all the same.
		_ = st.Close()
		s.metrics.observe(st.Result())
	}()
	if plan.req.Logprobs {
		plan.trail = newTrail(lease.Engine().Tokenizer(), plan.forced)
	}
	if plan.fallback != nil {
		// The built-in format replaced the model's template: say so.
		w.Header().Set("X-Prism-Template-Fallback", clip(plan.fallback.Error()))
	}
	if plan.nullAsEmpty {
		w.Header().Set("X-Prism-Null-Content", `rendered as ""`)
	}
	answer(st)
	return nil
}

// planChat checks what the engine does not, renders the prompt and builds
// the engine request.
func (s *Server) planChat(ctx context.Context, req *wire.ChatRequest) (*chatPlan, error) {
	sel, err := s.resolve(req.Model)
	if err != nil {
		return nil, err
	}
	chat, err := s.chat(sel.Dir)
	if err != nil {
		return nil, err
	}
	format := tools.DetectFormat(chat.Source(true))
	raw := make([]json.RawMessage, len(req.Tools))
	for i, t := range req.Tools {
		raw[i] = t.Raw
	}
	narrowed, err := tools.Narrow(req.ToolChoice, raw, format)
	if err != nil {
		return nil, err
	}
	in, err := templateInput(req, narrowed.Tools)
	if err != nil {
		return nil, err
	}
	prompt, err := chat.Render(ctx, in)
	if err != nil {
		return nil, err
	}
	if prompt.NullAsEmpty != nil {
		s.log.Warn("chat template fails on null message content; rendered it as an empty string", "model", sel.ID, "messages", prompt.NullAsEmpty)
	}
	source := chat.Source(len(narrowed.Tools) > 0)
	reasonOpt := reasoning.ForTemplate(source)
	plan := &chatPlan{
		id: "chatcmpl-" + randomHex(12), model: req.Model, key: Key(sel),
		format: format, narrowed: narrowed, reasonOpt: reasonOpt,
		parallel: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
	}
	plan.nullAsEmpty = prompt.NullAsEmpty != nil
	if prompt.Fallback {
		plan.fallback = prompt.FallbackCause
		s.log.Warn("chat template replaced by the built-in format", "model", sel.ID, "cause", prompt.FallbackCause)
	}
	plan.prompt = prompt.Text
	open, until := reasoning.AnswerStart(prompt.Text, source, reasonOpt...)
	if len(narrowed.Tools) > 0 {
		open, until = reasoning.CallStart(prompt.Text, source, reasonOpt...)
	}
	if narrowed.MustCall() && !callAfterReasoning(narrowed, until) {
		plan.forced = narrowed.ForcedAfter(prompt.Text, reasonOpt...)
	}
	plan.req = engineRequest(req, plan.prompt+plan.forced)
	// Harmony's channel and call markers are special tokens, which the
	// reasoning splitter and the tool-call parser read in the text.
	plan.req.KeepSpecial = format == tools.FormatHarmony
	plan.req.Constraint, err = s.constraint(constraintInput{dir: sel.Dir, format: req.ResponseFormat, narrowed: narrowed,
		parallel: plan.parallel, prompt: plan.prompt, open: open, until: until})
	if err != nil {
		return nil, err
	}
	return plan, nil
}

func (s *Server) chat(dir string) (*templates.Chat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chats[dir]; ok {
		return c, nil
	}
	c, err := s.cfg.LoadChat(dir)
	if err != nil {
		return nil, err
	}
	if err := c.Err(); err != nil {
		s.log.Warn("chat template refused; requests without tools use the built-in format", "dir", dir, "err", err)
	}
	s.chats[dir] = c
	return c, nil
}

// templateInput turns the wire messages into what the template sees.
func templateInput(req *wire.ChatRequest, offered []json.RawMessage) (templates.Input, error) {
	in := templates.Input{Tools: offered, AddGenerationPrompt: true}
	for _, m := range req.Messages {
		tm := templates.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, ReasoningContent: m.Thinking()}
		if tm.Role == "developer" {
			tm.Role = "system" // the templates know system; developer is its newer name
		}
		switch m.Content.Kind {
		case wire.ContentString:
			tm.Content = templates.Text(m.Content.Text)
		case wire.ContentParts:
			tm.Content = templates.Text(m.Content.String())
		default:
			tm.Content = templates.Null()
		}
		for _, c := range m.ToolCalls {
			args, err := json.Marshal(c.Function.Arguments)
			if err != nil {
				return in, err
			}
			tm.ToolCalls = append(tm.ToolCalls, templates.ToolCall{ID: c.ID, Type: "function",
				Function: templates.FunctionCall{Name: c.Function.Name, Arguments: args}})
		}
		in.Messages = append(in.Messages, tm)
	}
	if req.ReasoningEffort != "" || len(req.ChatTemplateKwargs) > 0 {
		in.Extra = map[string]any{}
	}
	if req.ReasoningEffort != "" {
		in.Extra["reasoning_effort"] = req.ReasoningEffort
	}
	if len(req.ChatTemplateKwargs) > 0 {
		var kw map[string]json.RawMessage
		if err := json.Unmarshal(req.ChatTemplateKwargs, &kw); err != nil {
			return in, &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: "chat_template_kwargs", message: "chat_template_kwargs: want an object"}
		}
		for k, v := range kw {
			in.Extra[k] = v
		}
	}
	return in, nil
}

func engineRequest(req *wire.ChatRequest, prompt string) engine.Request {
	// An omitted temperature stays 0 so the engine applies the model
	// folder's generation defaults (greedy when it declares sampling off or
	// nothing). An explicit 0 also sets top_k 1: the engine reads a zero
	// temperature as unset, and the caller asked for greedy, not for the
	// model's temperature.
	out := engine.Request{Prompt: prompt, MaxTokens: req.Limit(), Stop: req.Stop, Seed: req.Seed}
	if v := req.Temperature; v != nil {
		out.Temperature = *v
	}
	if v := req.TopP; v != nil {
		out.TopP = *v
	}
	if v := req.TopK; v != nil {
		out.TopK = *v
	}
	if v := req.MinP; v != nil {
		out.MinP = *v
	}
	if v := req.FrequencyPenalty; v != nil {
		out.FrequencyPenalty = *v
	}
	if v := req.PresencePenalty; v != nil {
		out.PresencePenalty = *v
	}
	if v := req.RepetitionPenalty; v != nil {
		out.RepetitionPenalty = *v
	}
	if v := req.Temperature; v != nil && *v == 0 {
		out.TopK = 1 // greedy, whatever top_k the request or the folder gives
	}
	out.Logprobs = req.Logprobs
	if v := req.TopLogprobs; v != nil && req.Logprobs {
		out.TopLogprobs = *v
	}
	return out
}

// answer reads a stream through the tool-call parser (reasoning split
// first), calling emit for each event.
type answer struct {
	parser *tools.StreamParser
	events []tools.Event
	// reasoningTokens counts the generated tokens that were thinking: fed
	// inside a think block or opening or closing one.
	reasoningTokens int
	trail           *trail // logprobs: the tokens behind the content, or nil
}

func newAnswer(p *chatPlan) *answer {
	opts := append([]reasoning.Option{reasoning.WithPrompt(p.prompt + p.forced)}, p.reasonOpt...)
	a := &answer{parser: tools.NewStreamParser(p.format, tools.WithReasoning(opts...))}
	if p.forced != "" {
		a.events = a.parser.Feed(a.events, p.forced)
	}
	if a.trail = p.trail; a.trail != nil {
		a.trail.match(a.events, a.parser.Held())
	}
	return a
}

// run feeds the stream to the parser; emit gets the events of each piece
// and returns false to stop. Generation also stops after the first call
// when parallel tool calls are off.
func (s *Server) run(p *chatPlan, st *engine.Stream, a *answer, emit func([]tools.Event) bool) {
	if len(a.events) > 0 && !emit(a.events) {
		return
	}
	for st.Next() {
		tok := st.Token()
		if a.trail != nil {
			a.trail.push(tok)
		}
		thinking := a.parser.InReasoning()
		a.events = a.parser.Feed(a.events[:0], tok.Text())
		if thinking || a.parser.InReasoning() {
			a.reasoningTokens++
		}
		if a.trail != nil {
			a.trail.match(a.events, a.parser.Held())
		}
		if len(a.events) > 0 && !emit(a.events) {
			return
		}
		if !p.parallel && a.parser.Completed() > 0 {
			_ = st.Close()
			break
		}
	}
	a.events = a.parser.Flush(a.events[:0])
	if a.trail != nil {
		a.trail.match(a.events, a.parser.Held())
		a.trail.finish()
	}
	emit(a.events)
}

func finishReason(a *answer, st *engine.Stream) string {
	if st.Result().FinishReason == engine.FinishLength && len(a.parser.Abandoned()) > 0 {
		return wire.FinishLength // a call was cut: its start went out, it never ended
	}
	if a.parser.Completed() > 0 {
		return wire.FinishToolCalls
	}
	if st.Result().FinishReason == engine.FinishLength {
		return wire.FinishLength
	}
	return wire.FinishStop
}

func usage(st *engine.Stream) *wire.Usage {
	u := st.Result().Usage
	return wire.NewUsage(u.PromptTokens, u.CachedTokens, u.CompletionTokens)
}

func (s *Server) wholeChat(w http.ResponseWriter, r *http.Request, id, model string, g generation) {
	var all []tools.Event
	g.run(func(ev []tools.Event) bool {
		all = append(all, ev...)
		return true
	})
	if err := g.err(); err != nil {
		s.writeError(w, r, fmt.Errorf("generation: %w", err))
		return
	}
	s.warn(all)
	res := tools.Assemble(all, g.reasoningSeen())
	var calls []wire.ToolCall
	for _, c := range res.Calls {
		calls = append(calls, wire.ToolCall{ID: c.ID, Type: "function", Function: wire.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	msg := wire.NewResponseMessage(res.Content, res.Reasoning, calls)
	if res.HasReasoning && res.Reasoning == "" {
		empty := ""
		msg.ReasoningContent, msg.Reasoning = &empty, &empty
	}
	choice := wire.Choice{Message: msg, FinishReason: g.finishReason()}
	if lp, ok := logprobsOf(g); ok {
		choice.Logprobs = &wire.Logprobs{Content: append([]wire.TokenLogprob{}, lp.logprobs()...)}
	}
	writeJSON(w, http.StatusOK, wire.ChatCompletion{ID: id, Object: "chat.completion", Created: s.cfg.Now().Unix(), Model: model,
		Choices: []wire.Choice{choice}, Usage: g.usage()})
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, id, model string, g generation, includeUsage bool) {
	sw, err := sse.Start(w)
	if err != nil {
		s.log.Error("start event stream", "err", err)
		return
	}
	enc := wire.NewChunkEncoder(id, model, s.cfg.Now().Unix())
	empty := ""
	if sw.JSON(enc.Chunk(wire.Delta{Role: "assistant", Content: &empty}, "")) != nil {
		return
	}
	var buf []byte
	lp, withLogprobs := logprobsOf(g)
	g.run(func(ev []tools.Event) bool {
		s.warn(ev)
		last := -1 // the content event that carries the feed's logprobs
		if withLogprobs {
			for i, e := range ev {
				if e.Kind == tools.EventContent {
					last = i
				}
			}
		}
		for i, e := range ev {
			switch e.Kind {
			case tools.EventContent:
				if i == last {
					err = sw.JSON(logprobsChunk(enc, wire.ContentDelta(e.Text), "", lp.logprobs()))
					break
				}
				buf = enc.AppendContent(buf[:0], e.Text)
				err = sw.Data(buf)
			case tools.EventReasoning:
				buf = enc.AppendReasoning(buf[:0], e.Text)
				err = sw.Data(buf)
			case tools.EventToolCall:
				err = sw.JSON(enc.Chunk(wire.Delta{ToolCalls: []wire.ToolCallDelta{toolCallDelta(e.Call)}}, ""))
			}
			if err != nil {
				return false // the client left: stop generating
			}
		}
		return true
	})
	if sw.Err() != nil {
		return
	}
	if err := g.err(); err != nil {
		e := classify(fmt.Errorf("generation: %w", err))
		s.log.Error("generation failed mid-stream", "err", err)
		_ = sw.JSON(wire.NewErrorBody(e.status, e.code, e.param, e.message))
		return
	}
	end := enc.Chunk(wire.Delta{}, g.finishReason())
	if withLogprobs {
		end = logprobsChunk(enc, wire.Delta{}, g.finishReason(), lp.logprobs())
	}
	if sw.JSON(end) != nil {
		return
	}
	if includeUsage && sw.JSON(enc.UsageChunk(g.usage())) != nil {
		return
	}
	_ = sw.Done()
}

func toolCallDelta(c tools.CallDelta) wire.ToolCallDelta {
	d := wire.ToolCallDelta{Index: c.Index, ID: c.ID, Type: c.Type, Function: &wire.FunctionDelta{Name: c.Name, Arguments: c.Arguments}}
	return d
}

func (s *Server) warn(ev []tools.Event) {
	for _, e := range ev {
		if e.Kind == tools.EventWarning {
			s.log.Warn("tool-call text handed back as content", "warning", e.Warning.String())
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
