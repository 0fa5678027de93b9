package server

import (
	"fmt"
	"net/http"
)

type embeddingsRequest struct {
	Model          string `json:"model"`
	Input          any    `json:"input"`
	EncodingFormat string `json:"encoding_format"`
	Dimensions     *int   `json:"dimensions"`
	User           string `json:"user"`
}

// embeddings answers POST /v1/embeddings. The models served here are ONNX
// text-generation models, which give no embeddings: the answer is a 400
// that says so, never vectors made up from a generator.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	if err := decodeStrict(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	sel, err := s.helperModel(req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeError(w, r, &apiError{status: http.StatusBadRequest, code: CodeUnsupportedModel, param: "model",
		message: fmt.Sprintf("model %q is an ONNX text-generation model: it gives no embeddings (embeddings come from the Ollama backend, not served yet)", clip(sel.ID))})
}
