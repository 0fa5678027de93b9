package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/modelfolder"
)

// resolve finds the model a request names: the -model one by its id, else
// through the catalog.
func (s *Server) resolve(name string) (catalog.Selection, error) {
	if d := s.cfg.Default; d.Dir != "" && name == d.ID {
		return catalog.Selection{Model: d}, nil
	}
	if s.catalog() == nil {
		return catalog.Selection{}, &catalog.Error{ErrCode: catalog.CodeModelNotFound, Name: name, Candidates: append(s.ids(), s.ollamaNames()...)}
	}
	sel, err := s.catalog().Resolve(name)
	var ce *catalog.Error
	if errors.As(err, &ce) && ce.ErrCode == catalog.CodeModelNotFound && s.cfg.Default.Dir != "" {
		// The catalog does not know the -model one; name it among the models there are.
		ce.Candidates = append([]string{s.cfg.Default.ID}, ce.Candidates...)
	}
	if errors.As(err, &ce) && ce.ErrCode == catalog.CodeModelNotFound {
		if s.ollamaListed(name) {
			// Only chat completions, responses and embeddings reach Ollama.
			return sel, &apiError{status: http.StatusBadRequest, code: CodeUnsupportedModel, param: "model",
				message: fmt.Sprintf("model %q is an Ollama model: this endpoint serves ONNX models (Ollama's serve POST /v1/chat/completions, /v1/responses and /v1/embeddings)", clip(name))}
		}
		ce.Candidates = append(ce.Candidates, s.ollamaNames()...)
	}
	return sel, err
}

// Key is the name the Manager's loader is given for a selection: the
// folder, and the variant after a newline (a character no folder name the
// catalog offers contains).
func Key(sel catalog.Selection) string {
	if sel.Variant == "" {
		return sel.Dir
	}
	return sel.Dir + "\n" + sel.Variant
}

// SplitKey undoes Key.
func SplitKey(key string) (dir, variant string) {
	dir, variant, _ = strings.Cut(key, "\n")
	return dir, variant
}

func (s *Server) models() []catalog.Model {
	var out []catalog.Model
	if s.cfg.Default.Dir != "" {
		out = append(out, s.cfg.Default)
	}
	if cat := s.catalog(); cat != nil {
		for _, m := range cat.Models() {
			if m.ID != s.cfg.Default.ID {
				out = append(out, m)
			}
		}
	}
	return out
}

func (s *Server) ids() []string {
	var ids []string
	for _, m := range s.models() {
		ids = append(ids, m.ID)
	}
	return ids
}

func (s *Server) wireModel(m catalog.Model, variant string) wire.Model {
	st := s.cfg.Manager.Stats()
	out := wire.Model{ID: m.ID, Object: "model", Created: s.cfg.Now().Unix(), OwnedBy: "prism", Backend: "onnx", Variant: variant,
		Demo: modelfolder.IsDemo(m.Dir)}
	if variant != "" {
		out.ID = m.ID + ":" + variant
	}
	if dir, _ := SplitKey(st.ActiveModel); dir == m.Dir {
		out.Device = st.Device
	}
	return out
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	list := wire.ModelList{Object: "list", Data: []wire.Model{}}
	for _, m := range s.models() {
		list.Data = append(list.Data, s.wireModel(m, ""))
	}
	if s.ollama != nil {
		// Absent while Ollama does not answer (its listing logs why).
		if models, err := s.ollama.list(r.Context()); err == nil {
			for _, m := range models {
				if !s.onnxExact(m.Name) { // else the name addresses the ONNX model
					list.Data = append(list.Data, ollamaWire(m))
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if m, ok, err := s.ollamaModel(r.Context(), id); err != nil || ok {
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, ollamaWire(m))
		return
	}
	sel, err := s.resolve(id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.wireModel(sel.Model, sel.Variant))
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	st := s.cfg.Manager.Stats()
	h := wire.Health{Status: "ok", Device: st.Device, FallbackReason: st.FallbackReason, Busy: st.InUse,
		QueueDepth: st.Waiting, MaxQueue: st.MaxQueue, KVCache: st.KVCache, KVCacheReason: st.KVCacheReason,
		Prefill: st.Prefill, PrefillReason: st.PrefillReason, Pull: s.cfg.Pull != nil,
		Speculation: st.Speculation, SpeculationReason: st.SpeculationReason,
		Batch: st.Batch, BatchReason: st.BatchReason, MaxBatch: st.MaxBatch, Streams: st.Leases}
	if st.ActiveModel != "" {
		h.Model = s.modelName(st.ActiveModel)
	}
	writeJSON(w, http.StatusOK, h)
}
