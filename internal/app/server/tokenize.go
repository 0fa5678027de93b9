package server

import (
	"fmt"
	"net/http"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
)

// The llama.cpp-style helpers: POST /tokenize, /detokenize and
// /apply-template. They read the model folder's tokenizer and template and
// never take the engine lock, so they answer while a generation runs.

type tokenizeRequest struct {
	Model      string `json:"model"`
	Content    string `json:"content"`
	AddSpecial bool   `json:"add_special"`
	WithPieces bool   `json:"with_pieces"`
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

// TokenPiece is one token of a /tokenize answer with with_pieces.
type TokenPiece struct {
	ID    int32  `json:"id"`
	Piece string `json:"piece"`
}

// decodeStrict reads one JSON object into v, refusing unknown keys with
// unknown_parameter as the chat endpoints do.
func decodeStrict(r *http.Request, v any) error {
	body, err := wire.ReadBody(r.Body)
	if err != nil {
		return err
	}
	return wire.DecodeObject(body, v)
}

// helperModel resolves the model of a helper request; the -model one when
// the request names none.
func (s *Server) helperModel(name string) (catalog.Selection, error) {
	if name == "" && s.cfg.Default.Dir != "" {
		return catalog.Selection{Model: s.cfg.Default}, nil
	}
	if name == "" {
		return catalog.Selection{}, &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: "model", message: "model is required"}
	}
	return s.resolve(name)
}

func (s *Server) tokenizer(dir string) (*tokenizer.Tokenizer, error) {
	return s.texts.Tokenizer(dir) // the one the engine generates with
}

// modelTokenizer resolves a helper request's model and returns its tokenizer.
func (s *Server) modelTokenizer(name string) (*tokenizer.Tokenizer, error) {
	sel, err := s.helperModel(name)
	if err != nil {
		return nil, err
	}
	return s.tokenizer(sel.Dir)
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if err := decodeStrict(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	tok, err := s.modelTokenizer(req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ids := tok.Encode(req.Content)
	if req.AddSpecial {
		ids = tok.EncodeWithSpecial(req.Content)
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	pieces := make([]TokenPiece, len(ids))
	for i, id := range ids {
		p, _ := tok.Piece(id)
		pieces[i] = TokenPiece{ID: id, Piece: string(p)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": pieces})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if err := decodeStrict(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	tok, err := s.modelTokenizer(req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for i, id := range req.Tokens {
		if id < 0 || int(id) >= tok.VocabSize() {
			s.writeError(w, r, &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: fmt.Sprintf("tokens[%d]", i),
				message: fmt.Sprintf("tokens[%d]: %d is not a token id of this model (0 to %d)", i, id, tok.VocabSize()-1)})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"content": tok.Decode(req.Tokens, false)})
}

// applyTemplate answers the exact prompt a chat completion with this body
// would generate from, forced tool-call opening included.
func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
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
	plan, err := s.planChat(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"prompt": plan.req.Prompt}
	if plan.fallback != nil {
		out["template_fallback"] = plan.fallback.Error()
	}
	writeJSON(w, http.StatusOK, out)
}
