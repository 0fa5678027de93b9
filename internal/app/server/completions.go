package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/sse"
	"github.com/prism-local/prism/internal/app/wire"
)

// completions serves POST /v1/completions: the prompt as it is, no chat
// template and no reasoning split (spec P7).
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, err := wire.ReadBody(r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := wire.DecodeCompletion(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Logprobs != nil && req.Echo {
		s.writeError(w, r, &apiError{status: http.StatusBadRequest, code: wire.CodeUnsupportedParameter, param: "echo",
			message: "echo with logprobs is not supported: the server does not compute the prompt's log-probabilities; drop echo or logprobs"})
		return
	}
	sel, err := s.resolve(req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lease, err := s.cfg.Manager.Use(ctx, Key(sel), func() bool { return ctx.Err() == nil })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer lease.Release()
	ereq := engineRequest(&wire.ChatRequest{Sampling: req.Sampling}, req.Prompt.Text)
	ereq.MaxTokens = req.Limit()
	if req.Logprobs != nil {
		ereq.Logprobs, ereq.TopLogprobs = true, *req.Logprobs
	}
	var echo string
	if req.Prompt.IsIDs {
		ereq.Prompt = ""
		ereq.PromptIDs = make([]int32, len(req.Prompt.IDs))
		for i, id := range req.Prompt.IDs {
			ereq.PromptIDs[i] = int32(id)
		}
		if req.Echo {
			echo = lease.Engine().Tokenizer().Decode(ereq.PromptIDs, false)
		}
	} else if req.Echo {
		echo = req.Prompt.Text
	}
	st, err := lease.Engine().Stream(ctx, ereq)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer func() {
		// Close first: a stream its client left (a failed write) has no
		// Result until it is closed, and its tokens count all the same.
		_ = st.Close()
		s.metrics.observe(st.Result())
	}()
	id, created := "cmpl-"+randomHex(12), s.cfg.Now().Unix()
	var lp *legacy
	if ereq.Logprobs {
		lp = newLegacy(lease.Engine().Tokenizer())
	}
	if req.Stream {
		s.streamCompletion(w, st, id, req.Model, created, echo, req.IncludeUsage(), lp)
		return
	}
	var text strings.Builder
	text.WriteString(echo)
	for st.Next() {
		text.Write(st.Token().Piece)
		if lp != nil {
			lp.push(st.Token())
		}
	}
	if err := st.Err(); err != nil {
		s.writeError(w, r, fmt.Errorf("generation: %w", err))
		return
	}
	finish := textFinish(st)
	choice := wire.TextChoice{Text: text.String(), FinishReason: &finish}
	if lp != nil {
		choice.Logprobs = lp.take()
	}
	writeJSON(w, http.StatusOK, wire.TextCompletion{ID: id, Object: "text_completion", Created: created, Model: req.Model,
		Choices: []wire.TextChoice{choice}, Usage: usage(st)})
}

func textFinish(st *engine.Stream) string {
	if st.Result().FinishReason == engine.FinishLength {
		return wire.FinishLength
	}
	return wire.FinishStop
}

func (s *Server) streamCompletion(w http.ResponseWriter, st *engine.Stream, id, model string, created int64, echo string, includeUsage bool, lp *legacy) {
	sw, err := sse.Start(w)
	if err != nil {
		s.log.Error("start event stream", "err", err)
		return
	}
	chunk := func(text string, finish *string) wire.TextCompletion {
		return wire.TextCompletion{ID: id, Object: "text_completion", Created: created, Model: model,
			Choices: []wire.TextChoice{{Text: text, FinishReason: finish}}}
	}
	if echo != "" && sw.JSON(chunk(echo, nil)) != nil {
		return
	}
	for st.Next() {
		piece := st.Token().Piece
		if len(piece) == 0 {
			if lp != nil {
				lp.push(st.Token())
			}
			continue
		}
		c := chunk(string(piece), nil)
		if lp != nil {
			lp.push(st.Token())
			c.Choices[0].Logprobs = lp.take()
		}
		if err := sw.JSON(c); err != nil {
			s.clientLeft(id, err) // stop generating
			return
		}
	}
	if err := st.Err(); err != nil {
		if s.midStream(id, err) {
			return
		}
		e := classify(fmt.Errorf("generation: %w", err))
		_ = sw.JSON(wire.NewErrorBody(e.status, e.code, e.param, e.message))
		return
	}
	finish := textFinish(st)
	if sw.JSON(chunk("", &finish)) != nil {
		return
	}
	if includeUsage {
		u := chunk("", nil)
		u.Choices, u.Usage = []wire.TextChoice{}, usage(st)
		if sw.JSON(u) != nil {
			return
		}
	}
	_ = sw.Done()
}

// engineRequest maps the sampling fields of a request onto the engine's.
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
	out.NoSpeculation = req.Speculation != nil && !*req.Speculation
	out.Logprobs = req.Logprobs
	if v := req.TopLogprobs; v != nil && req.Logprobs {
		out.TopLogprobs = *v
	}
	return out
}

func usage(st *engine.Stream) *wire.Usage {
	u := st.Result().Usage
	return wire.NewUsage(u.PromptTokens, u.CachedTokens, u.CompletionTokens)
}
