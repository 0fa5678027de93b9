package ollama

import (
	"context"
	"fmt"
)

// EmbedRequest is one POST /api/embed.
type EmbedRequest struct {
	Model string
	// Input holds the texts to embed, at least one.
	Input []string
	// Dimensions, when above 0, truncates each vector to that length.
	Dimensions int
}

// Embeddings are the vectors of an EmbedRequest, one per input in order.
type Embeddings struct {
	Vectors [][]float32
	// PromptTokens is prompt_eval_count: the input tokens embedded.
	PromptTokens int
}

type embedBody struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

// Embed embeds req.Input with req.Model.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (Embeddings, error) {
	resp, err := c.do(ctx, "embed", "POST", "/api/embed", embedBody(req))
	if err != nil {
		return Embeddings{}, err
	}
	var body struct {
		Embeddings      [][]float32 `json:"embeddings"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}
	if err := decodeWhole("embed", resp, &body); err != nil {
		return Embeddings{}, err
	}
	if len(body.Embeddings) != len(req.Input) {
		return Embeddings{}, unavailable("embed", fmt.Sprintf("%d vectors for %d inputs", len(body.Embeddings), len(req.Input)), nil)
	}
	return Embeddings{Vectors: body.Embeddings, PromptTokens: body.PromptEvalCount}, nil
}
