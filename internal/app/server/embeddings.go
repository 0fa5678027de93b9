package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/internal/app/wire"
)

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

// embedding is one vector of the answer: a list of numbers, or their
// little-endian float32 bytes in base64 (encoding_format "base64", which
// the openai npm package asks for by default).
type embedding struct {
	Object    string `json:"object"` // "embedding"
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type embeddingsResponse struct {
	Object string      `json:"object"` // "list"
	Data   []embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// embeddings answers POST /v1/embeddings through Ollama's /api/embed for
// Ollama models. ONNX models here are text generators, which give no
// embeddings: for them the answer is a 400 that says so, never vectors
// made up from a generator.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	if err := decodeStrict(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Model == "" {
		s.writeError(w, r, &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: "model", message: "model is required"})
		return
	}
	m, ok, err := s.ollamaModel(r.Context(), req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !ok {
		sel, err := s.helperModel(req.Model)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeError(w, r, &apiError{status: http.StatusBadRequest, code: CodeUnsupportedModel, param: "model",
			message: fmt.Sprintf("model %q is an ONNX text-generation model: it gives no embeddings (embeddings come from Ollama's embedding models)", clip(sel.ID))})
		return
	}
	inputs, err := embeddingInputs(req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	oreq := ollama.EmbedRequest{Model: m.Name, Input: inputs}
	if req.Dimensions != nil {
		oreq.Dimensions = *req.Dimensions
	}
	emb, err := s.ollama.client.Embed(r.Context(), oreq)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := embeddingsResponse{Object: "list", Model: req.Model, Data: make([]embedding, len(emb.Vectors))}
	for i, v := range emb.Vectors {
		out.Data[i] = embedding{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			out.Data[i].Embedding = base64Floats(v)
		}
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = emb.PromptTokens, emb.PromptTokens
	writeJSON(w, http.StatusOK, out)
}

// embeddingInputs checks the request and returns its texts: input is a
// string or a list of strings (token-id input is refused: Ollama takes
// text).
func embeddingInputs(req embeddingsRequest) ([]string, error) {
	bad := func(param, msg string) error {
		return &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: param, message: msg}
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, bad("encoding_format", fmt.Sprintf("encoding_format must be float or base64, got %q", clip(req.EncodingFormat)))
	}
	if req.Dimensions != nil && *req.Dimensions < 1 {
		return nil, bad("dimensions", "dimensions must be 1 or more")
	}
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		if one == "" {
			return nil, bad("input", "input is an empty string")
		}
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(req.Input, &many) == nil && len(many) > 0 {
		return many, nil
	}
	if len(many) == 0 && string(req.Input) == "[]" {
		return nil, bad("input", "input is an empty list")
	}
	return nil, bad("input", "input must be a string or a list of strings (token ids are not served: Ollama embeds text)")
}

func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
