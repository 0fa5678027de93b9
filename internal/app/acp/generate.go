package acp

import (
	"context"
	"encoding/json"

	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/internal/app/wire"
)

// Message is one chat turn in the OpenAI message shape the reference
// server takes.
type Message = backend.Message

// ToolCall is a function call the model made.
type ToolCall = wire.ToolCall

// Usage counts one generation's tokens.
type Usage struct {
	PromptTokens, CompletionTokens int
}

// Delta is one streamed piece of an answer.
type Delta struct {
	Content, Reasoning string
}

// Answer is what one generation produced beyond its streamed text.
type Answer struct {
	Content   string
	ToolCalls []ToolCall
	Usage     Usage
}

// Generator runs chat generations.
type Generator interface {
	// Generate streams one answer to messages, calling emit for every
	// piece of text; tools are OpenAI function definitions.
	Generate(ctx context.Context, model string, messages []Message, tools []json.RawMessage, emit func(Delta) error) (Answer, error)
	// Models lists the ids of the models there are.
	Models(ctx context.Context) ([]string, error)
}

// BackendGenerator generates through internal/app/backend: the reference server
// at PRISM_BASE_URL, or its handler in process (load lock and budget) when
// the server is unreachable.
type BackendGenerator struct {
	Backend *backend.Backend
}

// Generate streams one chat completion.
func (g BackendGenerator) Generate(ctx context.Context, model string, messages []Message, tools []json.RawMessage, emit func(Delta) error) (Answer, error) {
	req := backend.ChatRequest{Model: model, Messages: messages}
	if len(tools) > 0 {
		b, err := json.Marshal(tools)
		if err != nil {
			return Answer{}, err
		}
		req.Tools = b
	}
	res, err := g.Backend.Chat(ctx, req, func(d backend.Delta) error {
		if d.Content == "" && d.Reasoning == "" {
			return nil
		}
		return emit(Delta{Content: d.Content, Reasoning: d.Reasoning})
	})
	if err != nil {
		return Answer{}, err
	}
	return Answer{Content: res.Text, ToolCalls: res.ToolCalls,
		Usage: Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens}}, nil
}

// Models lists the answering side's model ids.
func (g BackendGenerator) Models(ctx context.Context) ([]string, error) {
	models, _, _, err := g.Backend.Models(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(models))
	for _, m := range models {
		ids = append(ids, m.ID)
	}
	return ids, nil
}
