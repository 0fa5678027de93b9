package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Message is one chat turn in the OpenAI message shape the reference
// server takes.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call the model made.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Usage counts one generation's tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
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

// Generator runs chat generations: the reference server over HTTP, or the
// same handler in process.
type Generator interface {
	// Generate streams one answer to messages, calling emit for every
	// piece of text; tools are OpenAI function definitions.
	Generate(ctx context.Context, model string, messages []Message, tools []json.RawMessage, emit func(Delta) error) (Answer, error)
	// Models lists the ids of the models there are.
	Models(ctx context.Context) ([]string, error)
}

// HTTPGenerator talks to an OpenAI-compatible server: the reference server
// at PRISM_BASE_URL, or the in-process one through InProcess's client.
type HTTPGenerator struct {
	// BaseURL ends in /v1.
	BaseURL string
	APIKey  string
	Client  *http.Client
}

// GenerationError is a failed generation: the server's status and message.
type GenerationError struct {
	Status  int
	Message string
}

// Error names the status and the server's message.
func (e *GenerationError) Error() string {
	if e.Status == 0 {
		return e.Message
	}
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Code returns the stable machine code.
func (e *GenerationError) Code() string { return "generation_failed" }

func (g *HTTPGenerator) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(g.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if g.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+g.APIKey)
	}
	resp, err := g.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, &GenerationError{Status: resp.StatusCode, Message: errorMessage(resp.Body)}
	}
	return resp, nil
}

// errorMessage reads the server's {"error":{"message"}} body, or the text.
func errorMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		if e.Error.Code != "" {
			return e.Error.Code + ": " + e.Error.Message
		}
		return e.Error.Message
	}
	return strings.TrimSpace(string(b))
}

// Models lists GET /models.
func (g *HTTPGenerator) Models(ctx context.Context) ([]string, error) {
	resp, err := g.do(ctx, http.MethodGet, "/models", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

type chatRequest struct {
	Model         string            `json:"model"`
	Messages      []Message         `json:"messages"`
	Tools         []json.RawMessage `json:"tools,omitempty"`
	Stream        bool              `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

// Generate streams POST /chat/completions.
func (g *HTTPGenerator) Generate(ctx context.Context, model string, messages []Message, tools []json.RawMessage, emit func(Delta) error) (Answer, error) {
	req := chatRequest{Model: model, Messages: messages, Tools: tools, Stream: true}
	req.StreamOptions.IncludeUsage = true
	resp, err := g.do(ctx, http.MethodPost, "/chat/completions", req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	var ans Answer
	var content strings.Builder
	calls := map[int]*ToolCall{}
	var order []int
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return ans, fmt.Errorf("the server sent an event that is not a chunk: %w", err)
		}
		if c.Error != nil {
			return ans, &GenerationError{Message: strings.TrimPrefix(c.Error.Code+": "+c.Error.Message, ": ")}
		}
		if c.Usage != nil {
			ans.Usage = *c.Usage
		}
		for _, ch := range c.Choices {
			d := ch.Delta
			if d.ReasoningContent != "" {
				if err := emit(Delta{Reasoning: d.ReasoningContent}); err != nil {
					return ans, err
				}
			}
			if d.Content != "" {
				content.WriteString(d.Content)
				if err := emit(Delta{Content: d.Content}); err != nil {
					return ans, err
				}
			}
			for _, tc := range d.ToolCalls {
				call, ok := calls[tc.Index]
				if !ok {
					call = &ToolCall{Type: "function"}
					calls[tc.Index] = call
					order = append(order, tc.Index)
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				call.Function.Name += tc.Function.Name
				call.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ans, ctx.Err()
		}
		return ans, fmt.Errorf("reading the stream: %w", err)
	}
	if !done {
		if ctx.Err() != nil {
			return ans, ctx.Err()
		}
		return ans, errors.New("the server ended the stream before [DONE]")
	}
	ans.Content = content.String()
	for _, i := range order {
		ans.ToolCalls = append(ans.ToolCalls, *calls[i])
	}
	return ans, nil
}
