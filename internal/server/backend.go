package server

import (
	"context"
	"net/http"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/tools"
)

// chatBackend produces the answer to a chat request: the engine, through
// the Manager, for ONNX models; Ollama for Ollama's. The handlers see only
// this and generation, so both answer in the same wire shapes.
type chatBackend interface {
	// answer resolves everything that can fail before the first byte
	// (spec I3: the template, the load, the first Ollama chunk) and then
	// calls write with the answer being produced. When it returns an error
	// nothing has been written, for the caller to send as JSON.
	answer(w http.ResponseWriter, r *http.Request, req *wire.ChatRequest, write func(generation)) error
}

// generation is one answer as the handlers write it: the tools package's
// events, whichever backend produces them.
type generation interface {
	// run calls emit with the events of each step until the answer ends
	// or emit returns false (the client left: generation stops).
	run(emit func([]tools.Event) bool)
	// err is the failure that ended the answer early, nil when it ended.
	err() error
	finishReason() string
	usage() *wire.Usage
	// reasoningSeen reports whether the answer had reasoning at all.
	reasoningSeen() bool
}

// chatBackend picks the backend a model name belongs to (docs/api.md,
// Backends): an exact ONNX id first, then an Ollama name, then the
// catalog's looser matches.
func (s *Server) chatBackend(ctx context.Context, name string) (chatBackend, error) {
	ok, err := s.isOllama(ctx, name)
	if err != nil {
		return nil, err
	}
	if ok {
		return ollamaChat{s: s}, nil
	}
	return onnxChat{s: s}, nil
}

// onnxChat answers through the engine.
type onnxChat struct{ s *Server }

func (b onnxChat) answer(w http.ResponseWriter, r *http.Request, req *wire.ChatRequest, write func(generation)) error {
	plan, err := b.s.planChat(r.Context(), req)
	if err != nil {
		return err
	}
	return b.s.generate(w, r, plan, func(st *engine.Stream) {
		write(&onnxGeneration{s: b.s, p: plan, st: st, a: newAnswer(plan)})
	})
}

// onnxGeneration is an engine stream read through the tool-call parser.
type onnxGeneration struct {
	s  *Server
	p  *chatPlan
	st *engine.Stream
	a  *answer
}

func (g *onnxGeneration) run(emit func([]tools.Event) bool) { g.s.run(g.p, g.st, g.a, emit) }
func (g *onnxGeneration) err() error                        { return g.st.Err() }
func (g *onnxGeneration) finishReason() string              { return finishReason(g.a, g.st) }
func (g *onnxGeneration) usage() *wire.Usage {
	u := usage(g.st)
	u.CompletionTokensDetails = &wire.CompletionTokensDetails{ReasoningTokens: min(g.a.reasoningTokens, u.CompletionTokens)}
	return u
}

func (g *onnxGeneration) reasoningSeen() bool { return g.a.parser.ReasoningSeen() }
