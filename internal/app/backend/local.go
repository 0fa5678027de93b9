package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
)

// side is where a call is answered: the reference server over HTTP
// (*Client) or the chat layer in this process (*local).
type side interface {
	Chat(ctx context.Context, req ChatRequest, onDelta func(Delta) error) (*Result, error)
	Models(ctx context.Context) ([]Model, error)
	Health(ctx context.Context) (wire.Health, error)
}

// local answers in this process, through the chat layer of package prism
// over an engine.Manager: the same templates, constraints, reasoning split
// and tool-call parsing as the reference server, with no HTTP in between.
type local struct {
	mgr  *engine.Manager
	cat  *catalog.Catalog
	chat *prism.EngineChat
	wg   sync.WaitGroup // calls in flight
	// generated counts the completion tokens of the answers given here,
	// cancelled ones included, as the server's
	// prism_completion_tokens_total does.
	generated atomic.Int64
}

// Models lists the catalog's models, as the reference server's
// /v1/models lists them.
func (l *local) Models(context.Context) ([]Model, error) {
	var out []Model
	for _, m := range l.cat.Models() {
		out = append(out, Model{ID: m.ID, OwnedBy: "prism"})
	}
	return out, nil
}

// Health is the Manager's state, as the reference server's /health gives
// it.
func (l *local) Health(context.Context) (wire.Health, error) {
	st := l.mgr.Stats()
	h := wire.Health{Status: "ok", Device: st.Device, FallbackReason: st.FallbackReason, Busy: st.InUse,
		QueueDepth: st.Waiting, MaxQueue: st.MaxQueue, KVCache: st.KVCache, KVCacheReason: st.KVCacheReason,
		Prefill: st.Prefill, PrefillReason: st.PrefillReason,
		Speculation: st.Speculation, SpeculationReason: st.SpeculationReason}
	if st.ActiveModel != "" {
		dir, variant := prism.SplitModelKey(st.ActiveModel)
		h.Model = dir
		for _, m := range l.cat.Models() {
			if m.Dir == dir {
				h.Model = m.ID
				break
			}
		}
		if variant != "" {
			h.Model += ":" + variant
		}
	}
	return h, nil
}

// Chat answers req with the chat layer, calling onDelta for every event
// that adds text, reasoning or a tool-call fragment. Cancelling ctx stops
// the generation within a token; an onDelta error stops it and is
// returned.
func (l *local) Chat(ctx context.Context, req ChatRequest, onDelta func(Delta) error) (*Result, error) {
	l.wg.Add(1)
	defer l.wg.Done()
	sel, err := l.cat.Resolve(req.Model)
	if err != nil {
		return nil, apiError(err)
	}
	creq, err := chatRequest(req)
	if err != nil {
		return nil, apiError(err)
	}
	st, err := l.chat.ChatStream(ctx, prism.ModelKey(sel.Dir, sel.Variant), creq)
	if err != nil {
		return nil, apiError(err)
	}
	defer func() {
		_ = st.Close()
		l.generated.Add(int64(st.Stats().Usage.CompletionTokens))
	}()
	res := &Result{Model: req.Model}
	var text, reasoning strings.Builder
	calls := map[int]*wire.ToolCall{}
	for st.Next() {
		var d Delta
		switch e := st.Event(); e.Kind {
		case prism.EventContent:
			d.Content = e.Text
		case prism.EventReasoning:
			d.Reasoning = e.Text
		case prism.EventToolCallBegin:
			d.ToolCalls = []wire.ToolCallDelta{{Index: e.Call.Index, ID: e.Call.ID, Type: "function", Function: &wire.FunctionDelta{Name: e.Call.Name}}}
		case prism.EventToolCallArgs:
			d.ToolCalls = []wire.ToolCallDelta{{Index: e.Call.Index, Function: &wire.FunctionDelta{Arguments: e.Call.Arguments}}}
		case prism.EventEnd:
			res.FinishReason = string(e.Finish)
			u := e.Usage
			res.Usage = *wire.NewUsage(u.PromptTokens, u.CachedTokens, u.CompletionTokens)
			res.Usage.CompletionTokensDetails = &wire.CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens}
			continue
		default:
			continue
		}
		text.WriteString(d.Content)
		reasoning.WriteString(d.Reasoning)
		mergeToolCalls(calls, d.ToolCalls)
		if onDelta != nil {
			if err := onDelta(d); err != nil {
				return nil, err
			}
		}
	}
	if err := st.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, apiError(err)
	}
	res.Text, res.Reasoning = text.String(), reasoning.String()
	for i := 0; i < len(calls); i++ {
		if tc, ok := calls[i]; ok {
			res.ToolCalls = append(res.ToolCalls, *tc)
		}
	}
	return res, nil
}

// chatRequest maps a request of the API's shape onto the chat layer's.
func chatRequest(req ChatRequest) (prism.ChatRequest, error) {
	choice, err := prism.ParseToolChoice(req.ToolChoice)
	if err != nil {
		return prism.ChatRequest{}, err
	}
	out := prism.ChatRequest{ToolChoice: choice, Temperature: req.Temperature}
	if req.MaxTokens != nil {
		out.MaxTokens = *req.MaxTokens
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		var tools []json.RawMessage
		if err := json.Unmarshal(req.Tools, &tools); err != nil {
			return out, newError(errcode.InvalidRequest, "tools: want an array of tools: "+err.Error())
		}
		for _, t := range tools {
			out.Tools = append(out.Tools, prism.Tool{JSON: t})
		}
	}
	if len(req.ResponseFormat) > 0 && string(req.ResponseFormat) != "null" {
		var f wire.ResponseFormat
		if err := json.Unmarshal(req.ResponseFormat, &f); err != nil {
			return out, newError(errcode.InvalidRequest, "response_format: "+err.Error())
		}
		switch f.Type {
		case "", "text":
		case "json_object":
			out.ResponseFormat.Type = prism.FormatJSONObject
		case "json_schema":
			out.ResponseFormat.Type = prism.FormatJSONSchema
			if f.JSONSchema != nil {
				out.ResponseFormat.Schema = f.JSONSchema.Schema
			}
		default:
			return out, newError(errcode.InvalidRequest, fmt.Sprintf("response_format: unknown type %q", f.Type))
		}
	}
	for _, m := range req.Messages {
		pm := prism.Message{Role: m.Role, ToolCallID: m.ToolCallID, Content: prism.Text(m.Content)}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, prism.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		out.Messages = append(out.Messages, pm)
	}
	return out, nil
}

// apiError gives a failure of the chat layer the shape the reference
// server's answer has (its code, the parameter at fault, the message),
// so a caller reads the same error whichever side answered; the cause is
// kept. A cancellation, or an error without a code, is returned as it is.
func apiError(err error) error {
	code := errcode.Of(err)
	if code == "" || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e := &APIError{ErrCode: code, Message: err.Error(), Err: err}
	var (
		re  *prism.RequestError
		ce  *catalog.Error
		ire *engine.InvalidRequestError
		cle *engine.ContextLengthError
	)
	switch {
	case errors.As(err, &re):
		e.Param, e.Message = re.Param, re.Message
	case errors.As(err, &ce):
		e.Param = "model"
	case errors.As(err, &ire):
		e.Param = ire.Param
	case errors.As(err, &cle):
		e.Param = "messages"
	}
	return e
}
