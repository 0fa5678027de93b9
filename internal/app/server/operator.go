package server

import (
	"bytes"
	"net/http"

	"github.com/prism-local/prism/internal/app/wire"
)

// Unloaded is the body of POST /v1/unload (spec P8).
type Unloaded struct {
	Unloaded bool    `json:"unloaded"`
	Model    *string `json:"model"`
}

// Drained is the body of POST /v1/drain (spec P12).
type Drained struct {
	Drained  bool    `json:"drained"`
	Model    *string `json:"model"`
	ExitInMS int     `json:"exit_in_ms"`
}

// drainExitMS is what POST /v1/drain promises; the main's graceful
// shutdown closes the listener at once and exits once the responses in
// flight, this one included, are written.
const drainExitMS = 250

// operatorOptions is the body of the operator endpoints: no options yet,
// so every key is an unknown_parameter.
type operatorOptions struct{}

// optionsBody reads the optional body of the operator endpoints: empty,
// or a JSON object, whose keys are refused as unknown parameters until
// the endpoints take options.
func optionsBody(r *http.Request) error {
	body, err := wire.ReadBody(r.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return wire.DecodeObject(body, &operatorOptions{})
}

// unload releases the resident model, waiting for the generation in
// flight; idempotent.
func (s *Server) unload(w http.ResponseWriter, r *http.Request) {
	if err := optionsBody(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.cfg.Manager.Unload(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := Unloaded{Unloaded: res.Unloaded}
	if res.Unloaded {
		name := s.modelName(res.Model)
		out.Model = &name
		s.log.Info("model unloaded on request", "model", name)
	}
	writeJSON(w, http.StatusOK, out)
}

// drain unloads the model and asks the main to shut down (Config.Drain).
func (s *Server) drain(w http.ResponseWriter, r *http.Request) {
	if err := optionsBody(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.cfg.Manager.Unload(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := Drained{Drained: res.Unloaded, ExitInMS: drainExitMS}
	if res.Unloaded {
		name := s.modelName(res.Model)
		out.Model = &name
	}
	s.log.Info("draining on request: shutting down", "model", res.Model)
	writeJSON(w, http.StatusOK, out)
	s.cfg.Drain()
}

// modelName is the id of the model a Manager key names.
func (s *Server) modelName(key string) string {
	dir, variant := SplitKey(key)
	name := dir
	for _, m := range s.models() {
		if m.Dir == dir {
			name = m.ID
			break
		}
	}
	if variant != "" {
		name += ":" + variant
	}
	return name
}
