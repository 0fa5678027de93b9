package ollama

import (
	"context"
	"time"
)

// Model is one model Ollama has, as GET /api/tags lists it.
type Model struct {
	// Name is the name requests use ("llama3.2:3b").
	Name       string       `json:"name"`
	Model      string       `json:"model"`
	ModifiedAt time.Time    `json:"modified_at"`
	Size       int64        `json:"size"`
	Digest     string       `json:"digest"`
	Details    ModelDetails `json:"details"`
}

// ModelDetails are a Model's details.
type ModelDetails struct {
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// Models lists the models Ollama has (GET /api/tags).
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	resp, err := c.do(ctx, "list models", "GET", "/api/tags", nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		Models []Model `json:"models"`
	}
	if err := decodeWhole("list models", resp, &body); err != nil {
		return nil, err
	}
	return body.Models, nil
}
