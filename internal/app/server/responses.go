package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/sse"
	"github.com/prism-local/prism/internal/app/wire"
)

// responses serves POST /v1/responses, the Responses API, statelessly. The
// request is turned into the chat form and answered by the chat path (the
// model's backend, and for ONNX models planChat, generate and run); only
// what is written differs: typed output items, and named events when
// streamed.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, err := wire.ReadBody(r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := wire.DecodeResponses(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	chat, err := req.ChatRequest()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.chatBackend(r.Context(), req.Model)
	if err != nil {
		s.writeError(w, r, responsesError(req, err))
		return
	}
	id := "resp_" + randomHex(24)
	err = b.answer(w, r, chat, func(g *generation) {
		if req.Stream {
			s.streamResponse(w, id, req, g)
			return
		}
		s.wholeResponse(w, r, id, req, g)
	})
	if err != nil {
		s.writeError(w, r, responsesError(req, err))
	}
}

// responsesError names the field at fault as the Responses request does:
// the chat path reports the chat form's names (messages, response_format).
// An error whose field needs no new name is returned as it is, cause and
// all.
func responsesError(req *wire.ResponsesRequest, err error) error {
	var gone *engine.ClientDisconnectedError
	if errors.As(err, &gone) {
		return err
	}
	e := classify(err)
	cp := *e
	if asked := req.LogprobsParam(); e.param == "logprobs" && asked != "" {
		// The Responses API asks for them through include or top_logprobs;
		// the message speaks of logprobs, not of a field.
		cp.param = asked
		return &cp
	}
	p := wire.ResponsesParam(e.param)
	if p == e.param {
		return err
	}
	cp.message = strings.ReplaceAll(cp.message, e.param, p)
	cp.param = p
	return &cp
}

// build feeds the answer's events to out, and its log-probabilities when
// the request asked for them: each step's decided entries (its last
// event) before the step's other events, which may hold the text they
// spell.
func (s *Server) build(out *output, g *generation) {
	if g.logprobs {
		out.lp = &textLogprobs{}
	}
	g.run(func(ev []prism.Event) bool {
		if n := len(ev); g.logprobs && n > 0 && ev[n-1].Kind == prism.EventLogprobs {
			out.addLogprobs(wireLogprobs(nil, ev[n-1].Logprobs))
			ev = ev[:n-1]
		}
		for _, e := range ev {
			if e.Kind == prism.EventWarning {
				s.log.Warn("answer warning", "warning", e.Text)
			}
			out.feedEvent(e)
		}
		return out.err == nil // the client left: stop generating
	})
}

func (s *Server) wholeResponse(w http.ResponseWriter, r *http.Request, id string, req *wire.ResponsesRequest, g *generation) {
	out := newOutput(nil)
	s.build(out, g)
	if err := g.err(); err != nil {
		s.writeError(w, r, responsesError(req, fmt.Errorf("generation: %w", err)))
		return
	}
	resp := wire.NewResponse(id, s.cfg.Now().Unix(), req)
	finishResponse(resp, out, g)
	// A call the model began but did not finish validly is handed back as
	// text (the warning says so); unlike a stream, nothing announced it. A
	// call the token limit cut stays, incomplete, as OpenAI returns it.
	resp.Output = slices.DeleteFunc(resp.Output, func(it wire.OutputItem) bool { return out.abandoned[it.ID] })
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) streamResponse(w http.ResponseWriter, id string, req *wire.ResponsesRequest, g *generation) {
	sw, err := sse.Start(w)
	if err != nil {
		s.log.Error("start event stream", "err", err)
		return
	}
	out := newOutput(func(e wire.Event) error { return sw.EventJSON(e.Name, e.Data) })
	resp := wire.NewResponse(id, s.cfg.Now().Unix(), req)
	out.emit(out.seq.Lifecycle(wire.EventCreated, resp))
	out.emit(out.seq.Lifecycle(wire.EventInProgress, resp))
	s.build(out, g)
	if out.err != nil {
		s.clientLeft(id, out.err)
		return
	}
	if err := g.err(); err != nil {
		if s.midStream(id, err) {
			return
		}
		failResponse(req, resp, out, fmt.Errorf("generation: %w", err))
		return
	}
	out.emit(out.seq.Lifecycle(finishResponse(resp, out, g), resp))
}

// failResponse ends a stream whose generation failed after the headers: an
// error event, then response.failed with the error and the output so far.
func failResponse(req *wire.ResponsesRequest, resp *wire.Response, out *output, err error) {
	e := classify(responsesError(req, err))
	out.emit(out.seq.Error(e.code, e.param, e.message))
	body := wire.NewErrorBody(e.status, e.code, e.param, e.message)
	resp.Status, resp.Output, resp.Error = wire.StatusFailed, out.items, &body.Error
	out.emit(out.seq.Lifecycle(wire.EventFailed, resp))
}

// finishResponse closes the output and sets the response's status, output
// and usage; it returns the name of the last event: completed, or
// incomplete when the token limit (or the context window, or the loop
// guard: the Responses API has one reason for all three) cut the answer.
func finishResponse(resp *wire.Response, out *output, g *generation) string {
	event, status := wire.EventCompleted, wire.StatusCompleted
	if g.finishReason() == wire.FinishLength {
		event, status = wire.EventIncomplete, wire.StatusIncomplete
		resp.IncompleteDetails = &wire.IncompleteDetails{Reason: "max_output_tokens"}
	}
	out.end(status)
	u := g.usage()
	var thinking int
	if d := u.CompletionTokensDetails; d != nil {
		thinking = d.ReasoningTokens
	}
	var cached int
	if d := u.PromptTokensDetails; d != nil {
		cached = d.CachedTokens
	}
	resp.Status, resp.Output = status, out.items
	resp.Usage = wire.NewResponseUsage(u.PromptTokens, cached, u.CompletionTokens, thinking)
	return event
}
