package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
)

// How long a model listing from Ollama is reused, and how long one may
// take: /v1/models and name resolution must not hang on a daemon that is
// down, and must not ask it on every request.
const (
	ollamaListFresh   = 5 * time.Second
	ollamaListRetry   = 2 * time.Second
	ollamaListTimeout = 2 * time.Second
	// ollamaAbsentRetry is how often a default URL that has never
	// answered is asked again.
	ollamaAbsentRetry = 15 * time.Second
)

// ollamaModels is the cached listing of Ollama's models.
type ollamaModels struct {
	client *ollama.Client
	log    *slog.Logger
	sf     singleflight.Group
	// onPurpose says the URL was configured (Config.OllamaOnPurpose): a
	// daemon that does not answer there is a problem worth a warning.
	onPurpose bool

	mu       sync.Mutex
	models   []ollama.Model // the last listing that succeeded
	at       time.Time      // when the last attempt ended
	err      error          // the last attempt's failure, nil when it succeeded
	answered bool           // Ollama has answered once
}

// absent reports whether Ollama is simply not there: the default URL,
// which has never answered. Its absence is no error, so it stays out of
// warnings and model_not_found messages until it answers. Call with mu
// held.
func (d *ollamaModels) absent() bool { return !d.onPurpose && !d.answered }

// list returns the models of the last listing that succeeded and the
// failure of the last attempt (then the models may be stale, or none). It
// asks Ollama again once the cached answer is old, one request at a time.
func (d *ollamaModels) list(ctx context.Context) ([]ollama.Model, error) {
	d.mu.Lock()
	age, err := time.Since(d.at), d.err
	retry := ollamaListRetry
	if d.absent() {
		retry = ollamaAbsentRetry
	}
	fresh := !d.at.IsZero() && (age < ollamaListFresh && err == nil || age < retry)
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
			switch {
			case err != nil && d.err == nil && d.absent():
				d.log.Info("no Ollama answering: serving the ONNX models only until it does", "url", d.client.URL())
			case err != nil && d.err == nil:
				d.log.Warn("Ollama's models are not listed: Ollama is not answering", "url", d.client.URL(), "err", err)
			case err == nil:
				if d.err != nil || d.at.IsZero() {
					d.log.Info("Ollama's models are listed", "url", d.client.URL(), "models", len(models))
				}
				d.models, d.answered = models, true
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
	s.ollama.mu.Lock()
	absent := s.ollama.absent()
	s.ollama.mu.Unlock()
	if listErr == nil || absent || ctx.Err() != nil {
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

// CheckOllama asks Ollama for its models once, so the log says at start
// whether its models are served; nothing without Config.Ollama.
func (s *Server) CheckOllama(ctx context.Context) {
	if s.ollama != nil {
		_, _ = s.ollama.list(ctx)
	}
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

// ollamaChat answers through Ollama's /api/chat, by the chat layer's
// prism.OllamaChat. It takes no lease of the Manager: Ollama runs its
// models in its own process (spec I2).
type ollamaChat struct{ s *Server }

func (b ollamaChat) answer(w http.ResponseWriter, r *http.Request, req *wire.ChatRequest, write func(*generation)) error {
	if req.Logprobs || req.TopLogprobs != nil {
		return &apiError{status: http.StatusBadRequest, code: wire.CodeUnsupportedParameter, param: "logprobs",
			message: "logprobs are not served for Ollama models"}
	}
	creq, err := chatRequest(req)
	if err != nil {
		return err
	}
	name := req.Model
	if m, ok, _ := b.s.ollamaModel(r.Context(), req.Model); ok {
		name = m.Name // "llama3.2" is sent as Ollama lists it, "llama3.2:latest"
	}
	st, err := prism.NewOllamaChat(b.s.ollama.client, prism.WithLogger(b.s.log)).ChatStream(r.Context(), name, creq)
	if err != nil {
		if oe := (*ollama.Error)(nil); errors.As(err, &oe) && oe.ErrCode == errcode.BackendUnavailable && oe.Status == 0 {
			b.s.ollama.down(err)
		}
		return err
	}
	defer st.Close()
	write(&generation{st: st})
	b.s.metrics.observe(st.Stats())
	return nil
}
