package server

import (
	"context"
	"net/http"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/internal/app/wire"
)

// chatBackend produces the answer to a chat request: the engine, through
// the Manager, for ONNX models; Ollama for Ollama's. Both are the chat
// layer's (prism.EngineChat, prism.OllamaChat); the handlers see only this
// and generation, so both answer in the same wire shapes.
type chatBackend interface {
	// answer resolves everything that can fail before the first byte
	// (spec I3: the template, the load, the first Ollama chunk) and then
	// calls write with the answer being produced. When it returns an error
	// nothing has been written, for the caller to send as JSON.
	answer(w http.ResponseWriter, r *http.Request, req *wire.ChatRequest, write func(*generation)) error
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

// onnxChat answers through the chat layer over the engine.
type onnxChat struct{ s *Server }

func (b onnxChat) answer(w http.ResponseWriter, r *http.Request, req *wire.ChatRequest, write func(*generation)) error {
	sel, err := b.s.resolve(req.Model)
	if err != nil {
		return err
	}
	creq, err := chatRequest(req)
	if err != nil {
		return err
	}
	st, err := b.s.engineChat.ChatStream(r.Context(), Key(sel), creq)
	if err != nil {
		return err
	}
	defer func() {
		// Close first: a stream its client left (a failed write) has no
		// Result until it is closed, and its tokens count all the same.
		_ = st.Close()
		b.s.metrics.observe(st.Stats())
	}()
	if st.TemplateFallback != nil {
		// The built-in format replaced the model's template: say so.
		w.Header().Set("X-Prism-Template-Fallback", clip(st.TemplateFallback.Error()))
	}
	if st.NullAsEmpty != nil {
		w.Header().Set("X-Prism-Null-Content", `rendered as ""`)
	}
	write(&generation{st: st, logprobs: creq.Logprobs, details: true})
	return nil
}

// generation is one answer as the handlers write it: the chat layer's
// events, whichever backend produces them.
type generation struct {
	st       *prism.ChatStream
	logprobs bool // the request asked for them: each step ends with EventLogprobs
	details  bool // the usage has reasoning tokens (the engine's; Ollama counts none)
}

// run calls emit with the events of each step until the answer ends or
// emit returns false (the client left: generation stops). With logprobs
// a step is the events up to its EventLogprobs, which is last; without,
// each event is a step of its own.
func (g *generation) run(emit func([]prism.Event) bool) {
	var step []prism.Event
	for g.st.Next() {
		e := g.st.Event()
		if e.Kind == prism.EventEnd {
			continue
		}
		step = append(step, e)
		if g.logprobs && e.Kind != prism.EventLogprobs {
			continue
		}
		if !emit(step) {
			_ = g.st.Close()
			return
		}
		step = step[:0]
	}
}

// err is the failure that ended the answer early, nil when it ended.
func (g *generation) err() error { return g.st.Err() }

func (g *generation) finishReason() string { return string(g.st.Finish()) }

func (g *generation) usage() *wire.Usage {
	u := g.st.Usage()
	out := wire.NewUsage(u.PromptTokens, u.CachedTokens, u.CompletionTokens)
	if g.details {
		out.CompletionTokensDetails = &wire.CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens}
	}
	return out
}
