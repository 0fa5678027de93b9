package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/tools"
)

// How long a model listing from Ollama is reused, and how long one may
// take: /v1/models and name resolution must not hang on a daemon that is
// down, and must not ask it on every request.
const (
	ollamaListFresh   = 5 * time.Second
	ollamaListRetry   = 2 * time.Second
	ollamaListTimeout = 2 * time.Second
)

// ollamaModels is the cached listing of Ollama's models.
type ollamaModels struct {
	client *ollama.Client
	log    *slog.Logger
	sf     singleflight.Group

	mu     sync.Mutex
	models []ollama.Model // the last listing that succeeded
	at     time.Time      // when the last attempt ended
	err    error          // the last attempt's failure, nil when it succeeded
}

// list returns the models of the last listing that succeeded and the
// failure of the last attempt (then the models may be stale, or none). It
// asks Ollama again once the cached answer is old, one request at a time.
func (d *ollamaModels) list(ctx context.Context) ([]ollama.Model, error) {
	d.mu.Lock()
	age, err := time.Since(d.at), d.err
	fresh := !d.at.IsZero() && (age < ollamaListFresh && err == nil || age < ollamaListRetry)
	d.mu.Unlock()
	if !fresh {
		ch := d.sf.DoChan("tags", func() (any, error) {
			// Not the caller's context: one leaving must not fail the
			// listing the others wait for.
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ollamaListTimeout)
			defer cancel()
			models, err := d.client.Models(lctx)
			d.mu.Lock()
			defer d.mu.Unlock()
			if err != nil && d.err == nil {
				d.log.Warn("Ollama's models are not listed: Ollama is not answering", "url", d.client.URL(), "err", err)
			}
			if err == nil {
				if d.err != nil || d.at.IsZero() {
					d.log.Info("Ollama's models are listed", "url", d.client.URL(), "models", len(models))
				}
				d.models = models
			}
			d.at, d.err = time.Now(), err
			return nil, nil
		})
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.models, d.err
}

// down records that a request found Ollama not answering, so the next
// listing asks again instead of serving names from before.
func (d *ollamaModels) down(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.log.Warn("Ollama stopped answering; its models are not listed until it answers again", "url", d.client.URL(), "err", err)
	}
	d.at, d.err = time.Now(), err
}

// lookupOllama finds name among models: exactly, or with Ollama's default tag
// ":latest" added, as Ollama itself resolves it.
func lookupOllama(models []ollama.Model, name string) (ollama.Model, bool) {
	for _, m := range models {
		if m.Name == name || !strings.Contains(name, ":") && m.Name == name+":latest" {
			return m, true
		}
	}
	return ollama.Model{}, false
}

// onnxExact reports whether name is exactly an ONNX model's id, or an id
// and a variant: such a name is the ONNX model's even when Ollama has a
// model of that name.
func (s *Server) onnxExact(name string) bool {
	base, variant := catalog.SplitVariant(name)
	for _, m := range s.models() {
		if m.ID == name || variant != "" && m.ID == base {
			return true
		}
	}
	return false
}

// isOllama reports whether name is served by Ollama: it is among the
// models Ollama listed last. When Ollama is not answering, a name that is
// no ONNX model either is 404 model_not_found with a message saying that
// Ollama's models could not be checked (a typo on a machine without
// Ollama stays a "not found"; a model Ollama listed before is still routed
// to it, and its request is the 502).
func (s *Server) isOllama(ctx context.Context, name string) (bool, error) {
	if s.ollama == nil || s.onnxExact(name) {
		return false, nil
	}
	models, listErr := s.ollama.list(ctx)
	if _, ok := lookupOllama(models, name); ok {
		return true, nil
	}
	if listErr == nil || ctx.Err() != nil {
		return false, nil
	}
	_, err := s.resolve(name)
	var ce *catalog.Error
	if !errors.As(err, &ce) || ce.ErrCode != catalog.CodeModelNotFound {
		return false, nil
	}
	return false, &apiError{status: http.StatusNotFound, code: errcode.ModelNotFound, param: "model",
		message: fmt.Sprintf("%s; Ollama at %s is not answering, so its models could not be checked", ce.Error(), s.ollama.client.URL())}
}

// ollamaModel returns the Ollama model name addresses, if it is one.
func (s *Server) ollamaModel(ctx context.Context, name string) (ollama.Model, bool, error) {
	ok, err := s.isOllama(ctx, name)
	if !ok || err != nil {
		return ollama.Model{}, false, err
	}
	models, _ := s.ollama.list(ctx)
	m, ok := lookupOllama(models, name)
	return m, ok, nil
}

// ollamaNames are the names of Ollama's models as last listed, without
// asking Ollama again (for the model_not_found message).
func (s *Server) ollamaNames() []string {
	if s.ollama == nil {
		return nil
	}
	s.ollama.mu.Lock()
	defer s.ollama.mu.Unlock()
	var names []string
	for _, m := range s.ollama.models {
		if !s.onnxExact(m.Name) {
			names = append(names, m.Name)
		}
	}
	return names
}

// ollamaListed reports whether Ollama's last listing has name, without
// asking Ollama again.
func (s *Server) ollamaListed(name string) bool {
	if s.ollama == nil {
		return false
	}
	s.ollama.mu.Lock()
	defer s.ollama.mu.Unlock()
	_, ok := lookupOllama(s.ollama.models, name)
	return ok
}

// ollamaWire is an Ollama model as GET /v1/models lists it.
func ollamaWire(m ollama.Model) wire.Model {
	return wire.Model{ID: m.Name, Object: "model", Created: m.ModifiedAt.Unix(), OwnedBy: "ollama", Backend: "ollama"}
}

// ollamaChat answers through Ollama's /api/chat. It takes no lease of the
// Manager: Ollama runs its models in its own process (spec I2).
type ollamaChat struct{ s *Server }

func (b ollamaChat) answer(w http.ResponseWriter, r *http.Request, req *wire.ChatRequest, write func(generation)) error {
	oreq, narrowed, err := ollamaRequest(req)
	if err != nil {
		return err
	}
	if m, ok, _ := b.s.ollamaModel(r.Context(), req.Model); ok {
		oreq.Model = m.Name // "llama3.2" is sent as Ollama lists it, "llama3.2:latest"
	}
	begin := time.Now()
	st, err := b.s.ollama.client.Chat(r.Context(), oreq) // the first chunk has arrived (I3)
	if err != nil {
		if oe := (*ollama.Error)(nil); errors.As(err, &oe) && oe.ErrCode == errcode.BackendUnavailable && oe.Status == 0 {
			b.s.ollama.down(err)
		}
		return err
	}
	defer st.Close()
	g := &ollamaGeneration{log: b.s.log, st: st, events: ollama.NewEvents(nil), narrowed: narrowed,
		parallel: req.ParallelToolCalls == nil || *req.ParallelToolCalls}
	ttft := time.Since(begin)
	write(g)
	b.s.metrics.observe(ollamaResult(st.Result(), ttft))
	return nil
}

// ollamaResult is what the metrics record of an Ollama answer: its token
// counts, the time until its first chunk, and the decode rate Ollama
// measured (none when it measured none).
func ollamaResult(res ollama.Result, ttft time.Duration) engine.Result {
	out := engine.Result{Usage: engine.Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens}}
	out.Timings.TimeToFirstToken = ttft
	if res.Eval > 0 && res.CompletionTokens > 1 {
		out.Timings.TokensPerSecond = float64(res.CompletionTokens) / res.Eval.Seconds()
	}
	return out
}

// ollamaGeneration is an Ollama stream mapped to events.
type ollamaGeneration struct {
	log      *slog.Logger
	st       *ollama.ChatStream
	events   *ollama.Events
	narrowed tools.Narrowed
	parallel bool
	buf      []tools.Event
}

func (g *ollamaGeneration) run(emit func([]tools.Event) bool) {
	for g.st.Next() {
		g.buf = g.events.Feed(g.buf[:0], g.st.Chunk())
		if !g.parallel {
			g.buf = g.firstCallOnly(g.buf)
		}
		if len(g.buf) > 0 && !emit(g.buf) {
			_ = g.st.Close()
			return
		}
	}
	g.buf = g.events.Flush(g.buf[:0])
	emit(g.buf)
}

// firstCallOnly drops the calls after the first when parallel tool calls
// are off (Ollama cannot be told so).
func (g *ollamaGeneration) firstCallOnly(ev []tools.Event) []tools.Event {
	out := ev[:0]
	for _, e := range ev {
		if e.Kind == tools.EventToolCall && e.Call.Index > 0 {
			if e.Call.Name != "" {
				g.log.Warn("parallel_tool_calls is false: a further tool call from Ollama is dropped", "name", e.Call.Name)
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

func (g *ollamaGeneration) calls() int {
	if !g.parallel {
		return min(g.events.Calls(), 1)
	}
	return g.events.Calls()
}

// err is the stream's failure; an answer without the call tool_choice
// demanded fails too, since Ollama cannot be made to call a tool.
func (g *ollamaGeneration) err() error {
	if err := g.st.Err(); err != nil {
		return err
	}
	if g.st.Done() && g.calls() == 0 {
		return g.narrowed.Verify(nil)
	}
	return nil
}

func (g *ollamaGeneration) finishReason() string {
	switch {
	case g.calls() > 0:
		return wire.FinishToolCalls
	case g.st.Result().DoneReason == "length":
		return wire.FinishLength
	}
	return wire.FinishStop
}

func (g *ollamaGeneration) usage() *wire.Usage {
	res := g.st.Result()
	return wire.NewUsage(res.PromptTokens, 0, res.CompletionTokens)
}

func (g *ollamaGeneration) reasoningSeen() bool { return g.events.ReasoningSeen() }

// ollamaRequest maps a chat request to /api/chat. What Ollama cannot do
// as asked is a 400 naming the parameter, never a different answer.
func ollamaRequest(req *wire.ChatRequest) (ollama.ChatRequest, tools.Narrowed, error) {
	unsupported := func(param, msg string) error {
		return &apiError{status: http.StatusBadRequest, code: wire.CodeUnsupportedParameter, param: param, message: msg}
	}
	out := ollama.ChatRequest{Model: req.Model}
	if req.Logprobs || req.TopLogprobs != nil {
		return out, tools.Narrowed{}, unsupported("logprobs", "logprobs are not served for Ollama models")
	}
	narrowed, err := tools.Narrow(req.ToolChoice, req.RawTools(), tools.FormatNone)
	if err != nil {
		return out, narrowed, err
	}
	out.Tools = narrowed.Tools
	if out.Messages, err = ollamaMessages(req.Messages); err != nil {
		return out, narrowed, err
	}
	if f := req.ResponseFormat; f != nil {
		switch f.Type {
		case "json_object":
			out.Format = json.RawMessage(`"json"`)
		case "json_schema":
			out.Format = f.JSONSchema.Schema
			if len(out.Format) == 0 {
				out.Format = json.RawMessage(`"json"`) // no schema: any JSON value, JSON mode
			}
		}
	}
	if out.Think, err = ollamaThink(req); err != nil {
		return out, narrowed, err
	}
	out.Options = ollama.Options{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, MinP: req.MinP, Seed: req.Seed,
		Stop: req.Stop, RepeatPenalty: req.RepetitionPenalty, PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty}
	if n := req.Limit(); n > 0 {
		out.Options.NumPredict = &n
	}
	return out, narrowed, nil
}

// ollamaThink maps reasoning_effort and chat_template_kwargs.enable_thinking
// to Ollama's think. Ollama renders its own template, so no other template
// variable can reach it.
func ollamaThink(req *wire.ChatRequest) (ollama.Think, error) {
	think := ollama.ThinkDefault
	switch req.ReasoningEffort {
	case "":
	case "none":
		think = ollama.ThinkOff
	case "low", "medium", "high":
		think = ollama.Think(req.ReasoningEffort)
	default:
		return think, &apiError{status: http.StatusBadRequest, code: wire.CodeUnsupportedParameter, param: "reasoning_effort",
			message: fmt.Sprintf("reasoning_effort %q has no Ollama equivalent: Ollama's think takes low, medium or high (or none to turn thinking off)", req.ReasoningEffort)}
	}
	for k, v := range req.TemplateKwargs() {
		var on bool
		if k != "enable_thinking" || json.Unmarshal(v, &on) != nil {
			return think, &apiError{status: http.StatusBadRequest, code: wire.CodeUnsupportedParameter, param: "chat_template_kwargs",
				message: fmt.Sprintf("chat_template_kwargs.%s: Ollama renders its own template; only enable_thinking (true or false) reaches it, as think", clip(k))}
		}
		switch {
		case !on:
			think = ollama.ThinkOff // turning thinking off wins over an effort
		case think == ollama.ThinkDefault:
			think = ollama.ThinkOn
		}
	}
	return think, nil
}

// ollamaMessages maps the messages: content parts joined, developer as
// system, tool-call arguments as objects, and each tool message named by
// the call it answers.
func ollamaMessages(msgs []wire.Message) ([]ollama.Message, error) {
	out := make([]ollama.Message, 0, len(msgs))
	names := map[string]string{} // tool-call id → function name
	for i, m := range msgs {
		om := ollama.Message{Role: m.Role, Content: m.Content.String()}
		if om.Role == "developer" {
			om.Role = "system"
		}
		if t := m.Thinking(); t != nil {
			om.Thinking = *t
		}
		for j, c := range m.ToolCalls {
			args := strings.TrimSpace(c.Function.Arguments)
			if args == "" {
				args = "{}"
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(args), &obj) != nil {
				param := fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j)
				return nil, &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: param,
					message: param + ": want a JSON object as text"}
			}
			names[c.ID] = c.Function.Name
			om.ToolCalls = append(om.ToolCalls, ollama.ToolCall{ID: c.ID, Function: ollama.FunctionCall{Index: j, Name: c.Function.Name, Arguments: json.RawMessage(args)}})
		}
		if m.Role == "tool" {
			om.ToolName = names[m.ToolCallID]
		}
		out = append(out, om)
	}
	return out, nil
}
