package prism

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/tools"
)

// OllamaChat answers chat requests with Ollama's /api/chat. It takes no
// lease of a Manager: Ollama runs its models in its own process (spec
// I2). What Ollama cannot do as asked (logprobs, a template variable
// other than enable_thinking, an effort it has no level for) is a
// *RequestError naming the parameter, never a different answer; a call
// tool_choice demands and Ollama did not make fails the stream.
type OllamaChat struct {
	client *ollama.Client
	log    *slog.Logger
}

// NewOllamaChat returns the chat layer over client; only WithLogger of
// opts applies.
func NewOllamaChat(client *ollama.Client, opts ...Option) *OllamaChat {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	log := cfg.logger
	if log == nil {
		log = slog.Default()
	}
	return &OllamaChat{client: client, log: log}
}

// ChatStream answers req with Ollama's model (its name as Ollama lists
// it). It returns once Ollama's first chunk has arrived, so a failure
// before the answer begins is its error (an *ollama.Error).
func (c *OllamaChat) ChatStream(ctx context.Context, model string, req ChatRequest) (*ChatStream, error) {
	oreq, narrowed, err := ollamaRequest(model, &req)
	if err != nil {
		return nil, requestError(err)
	}
	begin := time.Now()
	st, err := c.client.Chat(ctx, oreq) // the first chunk has arrived (I3)
	if err != nil {
		return nil, err
	}
	g := &ollamaSource{log: c.log, st: st, events: ollama.NewEvents(nil), narrowed: narrowed,
		parallel: !req.SerialToolCalls, ttft: time.Since(begin)}
	return &ChatStream{src: g}, nil
}

// ollamaSource is an Ollama stream mapped to events.
type ollamaSource struct {
	log      *slog.Logger
	st       *ollama.ChatStream
	events   *ollama.Events
	narrowed tools.Narrowed
	parallel bool
	ttft     time.Duration
	buf      []tools.Event
	ended    int
}

func (g *ollamaSource) step(dst []Event) ([]Event, bool) {
	for g.st.Next() {
		g.buf = g.events.Feed(g.buf[:0], g.st.Chunk())
		if !g.parallel {
			g.buf = g.firstCallOnly(g.buf)
		}
		if len(g.buf) > 0 {
			return g.out(dst), true
		}
	}
	g.buf = g.events.Flush(g.buf[:0])
	return g.out(dst), false
}

// out maps the step's events; Ollama's calls come whole, so each ends in
// the step it begins.
func (g *ollamaSource) out(dst []Event) []Event {
	dst = fromTools(dst, g.buf)
	for ; g.ended < g.calls(); g.ended++ {
		dst = append(dst, Event{Kind: EventToolCallEnd, Call: CallEvent{Index: g.ended}})
	}
	return dst
}

// firstCallOnly drops the calls after the first when parallel tool calls
// are off (Ollama cannot be told so).
func (g *ollamaSource) firstCallOnly(ev []tools.Event) []tools.Event {
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

func (g *ollamaSource) calls() int {
	if !g.parallel {
		return min(g.events.Calls(), 1)
	}
	return g.events.Calls()
}

// err is the stream's failure; an answer without the call tool_choice
// demanded fails too, since Ollama cannot be made to call a tool.
func (g *ollamaSource) err() error {
	if err := g.st.Err(); err != nil {
		return err
	}
	if g.st.Done() && g.calls() == 0 {
		return requestError(g.narrowed.Verify(nil))
	}
	return nil
}

func (g *ollamaSource) finish() FinishReason {
	switch {
	case g.calls() > 0:
		return FinishToolCalls
	case g.st.Result().DoneReason == "length":
		return FinishLength
	}
	return FinishStop
}

func (g *ollamaSource) usage() Usage {
	res := g.st.Result()
	return Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens}
}

func (g *ollamaSource) reasoningSeen() bool { return g.events.ReasoningSeen() }

// stats is what Ollama reported: the token counts, the time until its
// first chunk, and the decode rate it measured (none when it measured
// none).
func (g *ollamaSource) stats() engine.Result {
	res := g.st.Result()
	out := engine.Result{Usage: engine.Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens}}
	out.Timings.TimeToFirstToken = g.ttft
	if res.Eval > 0 && res.CompletionTokens > 1 {
		out.Timings.TokensPerSecond = float64(res.CompletionTokens) / res.Eval.Seconds()
	}
	return out
}

func (g *ollamaSource) close() error { return g.st.Close() }

// ollamaRequest maps a chat request to /api/chat.
func ollamaRequest(model string, req *ChatRequest) (ollama.ChatRequest, tools.Narrowed, error) {
	out := ollama.ChatRequest{Model: model}
	if req.Logprobs || req.TopLogprobs > 0 {
		return out, tools.Narrowed{}, unsupported("logprobs", "logprobs are not served for Ollama models")
	}
	raw, err := req.rawTools()
	if err != nil {
		return out, tools.Narrowed{}, err
	}
	narrowed, err := tools.Narrow(req.ToolChoice.raw(), raw, tools.FormatNone)
	if err != nil {
		return out, narrowed, err
	}
	out.Tools = narrowed.Tools
	if out.Messages, err = ollamaMessages(req.Messages); err != nil {
		return out, narrowed, err
	}
	switch f := req.ResponseFormat; f.Type {
	case FormatJSONObject:
		out.Format = json.RawMessage(`"json"`)
	case FormatJSONSchema:
		out.Format = f.Schema
		if len(out.Format) == 0 {
			out.Format = json.RawMessage(`"json"`) // no schema: any JSON value, JSON mode
		}
	}
	if out.Think, err = ollamaThink(req); err != nil {
		return out, narrowed, err
	}
	out.Options = ollama.Options{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, MinP: req.MinP, Seed: req.Seed,
		Stop: req.Stop, RepeatPenalty: req.RepetitionPenalty, PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty}
	if n := req.MaxTokens; n > 0 {
		out.Options.NumPredict = &n
	}
	return out, narrowed, nil
}

// ollamaThink maps the reasoning effort and the template variable
// enable_thinking to Ollama's think. Ollama renders its own template, so
// no other template variable can reach it.
func ollamaThink(req *ChatRequest) (ollama.Think, error) {
	think := ollama.ThinkDefault
	switch req.ReasoningEffort {
	case "":
	case "none":
		think = ollama.ThinkOff
	case "low", "medium", "high":
		think = ollama.Think(req.ReasoningEffort)
	default:
		return think, unsupported("reasoning_effort",
			"reasoning_effort %q has no Ollama equivalent: Ollama's think takes low, medium or high (or none to turn thinking off)", req.ReasoningEffort)
	}
	for k, v := range req.TemplateVars {
		on, ok := boolVar(v)
		if k != "enable_thinking" || !ok {
			return think, unsupported("chat_template_kwargs",
				"chat_template_kwargs.%s: Ollama renders its own template; only enable_thinking (true or false) reaches it, as think", clipText(k))
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

// boolVar reads a template variable that must be a boolean: a Go bool or
// its JSON text.
func boolVar(v any) (on, ok bool) {
	switch b := v.(type) {
	case bool:
		return b, true
	case json.RawMessage:
		return on, json.Unmarshal(b, &on) == nil
	}
	return false, false
}

// ollamaMessages maps the messages: developer as system, tool-call
// arguments as objects, and each tool message named by the call it
// answers.
func ollamaMessages(msgs []Message) ([]ollama.Message, error) {
	out := make([]ollama.Message, 0, len(msgs))
	names := map[string]string{} // tool-call id → function name
	for i, m := range msgs {
		om := ollama.Message{Role: m.Role, Content: m.Content.String()}
		if om.Role == "developer" {
			om.Role = "system"
		}
		if m.Reasoning != nil {
			om.Thinking = *m.Reasoning
		}
		for j, c := range m.ToolCalls {
			args := strings.TrimSpace(c.Arguments)
			if args == "" {
				args = "{}"
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(args), &obj) != nil {
				param := fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j)
				return nil, invalid(param, "%s: want a JSON object as text", param)
			}
			names[c.ID] = c.Name
			om.ToolCalls = append(om.ToolCalls, ollama.ToolCall{ID: c.ID, Function: ollama.FunctionCall{Index: j, Name: c.Name, Arguments: json.RawMessage(args)}})
		}
		if m.Role == "tool" {
			om.ToolName = names[m.ToolCallID]
		}
		out = append(out, om)
	}
	return out, nil
}

// clipText shortens a value from the request before it is repeated.
func clipText(s string) string {
	if len(s) > 100 {
		return strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}
