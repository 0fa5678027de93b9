package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/sse"
	"github.com/prism-local/prism/internal/app/wire"
)

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
	err = b.answer(w, r, req, func(g *generation) {
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

// chatPlan is what /apply-template reports of a chat request: the
// engine's request (its prompt) and the template's fallback cause.
type chatPlan struct {
	req      engine.Request
	fallback error
}

// planChat renders the prompt a chat completion with req would generate
// from, checking what the chat layer checks before it waits for the model.
func (s *Server) planChat(ctx context.Context, req *wire.ChatRequest) (*chatPlan, error) {
	sel, err := s.resolve(req.Model)
	if err != nil {
		return nil, err
	}
	creq, err := chatRequest(req)
	if err != nil {
		return nil, err
	}
	prompt, fallback, err := s.engineChat.Render(ctx, Key(sel), creq)
	if err != nil {
		return nil, err
	}
	return &chatPlan{req: engine.Request{Prompt: prompt}, fallback: fallback}, nil
}

// chatRequest maps a chat completion request onto the chat layer's.
func chatRequest(req *wire.ChatRequest) (prism.ChatRequest, error) {
	choice, err := prism.ParseToolChoice(req.ToolChoice)
	if err != nil {
		return prism.ChatRequest{}, err
	}
	out := prism.ChatRequest{ToolChoice: choice, SerialToolCalls: req.ParallelToolCalls != nil && !*req.ParallelToolCalls,
		AllowRepeatedCalls: req.AllowRepeatedCalls,
		ReasoningEffort:    req.ReasoningEffort, Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, MinP: req.MinP,
		FrequencyPenalty: req.FrequencyPenalty, PresencePenalty: req.PresencePenalty, RepetitionPenalty: req.RepetitionPenalty,
		Seed: req.Seed, Stop: req.Stop, MaxTokens: req.Limit(), Logprobs: req.Logprobs,
		NoSpeculation: req.Speculation != nil && !*req.Speculation}
	if v := req.TopLogprobs; v != nil {
		out.TopLogprobs = *v
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, prism.Tool{JSON: t.Raw})
	}
	if f := req.ResponseFormat; f != nil {
		switch f.Type {
		case "json_object":
			out.ResponseFormat = prism.ResponseFormat{Type: prism.FormatJSONObject}
		case "json_schema":
			out.ResponseFormat = prism.ResponseFormat{Type: prism.FormatJSONSchema}
			if f.JSONSchema != nil {
				out.ResponseFormat.Schema = f.JSONSchema.Schema
			}
		}
	}
	if kw := req.TemplateKwargs(); len(kw) > 0 {
		out.TemplateVars = make(map[string]any, len(kw))
		for k, v := range kw {
			out.TemplateVars[k] = v
		}
	}
	for _, m := range req.Messages {
		pm := prism.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, Reasoning: m.Thinking()}
		switch m.Content.Kind {
		case wire.ContentString, wire.ContentParts:
			pm.Content = prism.Text(m.Content.String())
		}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, prism.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		out.Messages = append(out.Messages, pm)
	}
	return out, nil
}

func (s *Server) wholeChat(w http.ResponseWriter, r *http.Request, id, model string, g *generation) {
	msg, err := g.st.Collect()
	if err != nil {
		s.writeError(w, r, fmt.Errorf("generation: %w", err))
		return
	}
	for _, text := range msg.Warnings {
		s.log.Warn("answer warning", "warning", text)
	}
	var calls []wire.ToolCall
	for _, c := range msg.ToolCalls {
		calls = append(calls, wire.ToolCall{ID: c.ID, Type: "function", Function: wire.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	out := wire.NewResponseMessage(msg.Content, msg.Reasoning, calls)
	if msg.HasReasoning && msg.Reasoning == "" {
		empty := ""
		out.ReasoningContent, out.Reasoning = &empty, &empty
	}
	choice := wire.Choice{Message: out, FinishReason: g.finishReason()}
	if g.logprobs {
		choice.Logprobs = &wire.Logprobs{Content: wireLogprobs(make([]wire.TokenLogprob, 0, len(msg.Logprobs)), msg.Logprobs)}
	}
	writeJSON(w, http.StatusOK, wire.ChatCompletion{ID: id, Object: "chat.completion", Created: s.cfg.Now().Unix(), Model: model,
		Choices: []wire.Choice{choice}, Usage: g.usage()})
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, id, model string, g *generation, includeUsage bool) {
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
	// pending are the logprobs entries decided and not yet sent: they go
	// with the last content delta of a step, or with the last chunk.
	var pending []wire.TokenLogprob
	g.run(func(ev []prism.Event) bool {
		last := -1 // the content event that carries the pending entries
		for i, e := range ev {
			switch e.Kind {
			case prism.EventContent:
				last = i
			case prism.EventLogprobs:
				pending = wireLogprobs(pending, e.Logprobs)
			}
		}
		for i, e := range ev {
			switch e.Kind {
			case prism.EventContent:
				if g.logprobs && i == last {
					err = sw.JSON(logprobsChunk(enc, wire.ContentDelta(e.Text), "", pending))
					pending = nil
					break
				}
				buf = enc.AppendContent(buf[:0], e.Text)
				err = sw.Data(buf)
			case prism.EventReasoning:
				buf = enc.AppendReasoning(buf[:0], e.Text)
				err = sw.Data(buf)
			case prism.EventToolCallBegin:
				err = sw.JSON(enc.Chunk(wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: e.Call.Index, ID: e.Call.ID, Type: "function",
					Function: &wire.FunctionDelta{Name: e.Call.Name}}}}, ""))
			case prism.EventToolCallArgs:
				err = sw.JSON(enc.Chunk(wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: e.Call.Index,
					Function: &wire.FunctionDelta{Arguments: e.Call.Arguments}}}}, ""))
			case prism.EventWarning:
				s.log.Warn("answer warning", "warning", e.Text)
			}
			if err != nil {
				return false // the client left: stop generating
			}
		}
		return true
	})
	if err := sw.Err(); err != nil {
		s.clientLeft(id, err)
		return
	}
	if err := g.err(); err != nil {
		if s.midStream(id, err) {
			return
		}
		e := classify(fmt.Errorf("generation: %w", err))
		_ = sw.JSON(wire.NewErrorBody(e.status, e.code, e.param, e.message))
		return
	}
	end := enc.Chunk(wire.Delta{}, g.finishReason())
	if g.logprobs {
		end = logprobsChunk(enc, wire.Delta{}, g.finishReason(), pending)
	}
	if sw.JSON(end) != nil {
		return
	}
	if includeUsage && sw.JSON(enc.UsageChunk(g.usage())) != nil {
		return
	}
	_ = sw.Done()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
