package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/resources"
)

// Bounds of the generation tools' arguments.
const (
	maxPromptBytes     = 1 << 20
	maxBenchmarkTokens = 512
	defaultBenchTokens = 64
	benchmarkPrompt    = "Write one short sentence about the sea."
	// progressEvery spaces progress notifications, so a fast model does
	// not flood the client.
	progressEvery = 100 * time.Millisecond
)

// ChatMessage is one message of generate's messages.
type ChatMessage struct {
	Role    string `json:"role" jsonschema:"system, user or assistant"`
	Content string `json:"content" jsonschema:"the message text"`
}

// GenerateIn is generate's input.
type GenerateIn struct {
	Prompt      string         `json:"prompt,omitempty" jsonschema:"the user message; give prompt or messages, not both"`
	Messages    []ChatMessage  `json:"messages,omitempty" jsonschema:"the conversation, oldest first; give prompt or messages, not both"`
	Model       string         `json:"model,omitempty" jsonschema:"the model id (list_models); omitted: the first model listed"`
	MaxTokens   int            `json:"max_tokens,omitempty" jsonschema:"the most tokens to generate; omitted or 0: the server's default"`
	Temperature *float64       `json:"temperature,omitempty" jsonschema:"sampling temperature 0 to 2; 0 is greedy; omitted: the model's default"`
	Schema      map[string]any `json:"schema,omitempty" jsonschema:"a JSON Schema the answer must match (sent as response_format json_schema)"`
}

// Usage is the token count of a generation.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// GenerateOut is generate's structured result.
type GenerateOut struct {
	Text         string   `json:"text" jsonschema:"the answer, without the reasoning"`
	Reasoning    string   `json:"reasoning" jsonschema:"the model's reasoning (think block), empty when it gave none"`
	Model        string   `json:"model"`
	FinishReason string   `json:"finish_reason" jsonschema:"stop, length or tool_calls"`
	Usage        Usage    `json:"usage"`
	Backend      string   `json:"backend" jsonschema:"server (the reference server) or in-process (the fallback)"`
	Warnings     []string `json:"warnings" jsonschema:"what was done instead of what was asked, such as a fallback"`
}

// ModelInfo is one model of list_models.
type ModelInfo struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by"`
}

// ListModelsOut is list_models' result.
type ListModelsOut struct {
	Models   []ModelInfo `json:"models"`
	Backend  string      `json:"backend"`
	Warnings []string    `json:"warnings"`
}

// GPUInfo is one GPU's memory, in MiB.
type GPUInfo struct {
	Index   int     `json:"index"`
	Name    string  `json:"name"`
	TotalMB float64 `json:"total_mib"`
	UsedMB  float64 `json:"used_mib"`
	FreeMB  float64 `json:"free_mib"`
}

// VRAM is this machine's GPU memory.
type VRAM struct {
	Available   bool      `json:"available"`
	Unavailable string    `json:"unavailable_reason" jsonschema:"why no GPU could be read, empty when one was"`
	GPUs        []GPUInfo `json:"gpus"`
}

// StatusOut is status's result.
type StatusOut struct {
	Backend        string   `json:"backend"`
	BaseURL        string   `json:"base_url" jsonschema:"the reference server tried first"`
	ResidentModel  string   `json:"resident_model" jsonschema:"the loaded model, empty when none"`
	Device         string   `json:"device" jsonschema:"the device the resident model really runs on"`
	FallbackReason string   `json:"fallback_reason" jsonschema:"why that is not the device asked for, empty when it is"`
	Busy           bool     `json:"busy"`
	QueueDepth     int      `json:"queue_depth"`
	MaxQueue       int      `json:"max_queue"`
	VRAM           VRAM     `json:"vram"`
	Warnings       []string `json:"warnings"`
}

// BenchmarkIn is benchmark's input.
type BenchmarkIn struct {
	Model     string `json:"model,omitempty" jsonschema:"the model id; omitted: the first model listed"`
	Prompt    string `json:"prompt,omitempty" jsonschema:"the prompt; omitted: a short fixed one"`
	MaxTokens int    `json:"max_tokens,omitempty" jsonschema:"tokens to generate, at most 512; omitted: 64"`
}

// BenchmarkOut is benchmark's result.
type BenchmarkOut struct {
	Model            string   `json:"model"`
	Device           string   `json:"device"`
	TTFTMillis       float64  `json:"ttft_ms" jsonschema:"time to the first streamed token"`
	TokensPerSecond  float64  `json:"tokens_per_second" jsonschema:"completion tokens per second after the first"`
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	TotalMillis      float64  `json:"total_ms"`
	Backend          string   `json:"backend"`
	Warnings         []string `json:"warnings"`
}

func (s *Server) addGenerationTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "generate", Title: "Generate text with a local model",
		Description: "Answers a prompt (or a conversation) with a local model and returns the text, the reasoning and the token usage. " +
			"Give schema to get JSON that matches it. Sends progress notifications while it generates; cancel to stop it."},
		s.generate)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_models", Title: "List the local models",
		Description: "Lists the models that generate can use.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		s.listModels)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "status", Title: "Device and model status",
		Description: "Reports the resident model, the device it really runs on and why if that is not the one asked for, VRAM and the queue.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		s.status)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "benchmark", Title: "Short speed run",
		Description: "Runs one short generation and reports time to first token, tokens per second and the device. Sends progress notifications; cancel to stop it."},
		s.benchmark)
}

func invalid(format string, args ...any) error {
	return &toolError{code: errcode.InvalidArgument, msg: fmt.Sprintf(format, args...)}
}

func (in *GenerateIn) request() (backend.ChatRequest, error) {
	req := backend.ChatRequest{Model: in.Model, Temperature: in.Temperature}
	switch {
	case in.Prompt != "" && len(in.Messages) > 0:
		return req, invalid("give prompt or messages, not both")
	case in.Prompt != "":
		req.Messages = []backend.Message{{Role: "user", Content: in.Prompt}}
	case len(in.Messages) > 0:
		for i, m := range in.Messages {
			switch m.Role {
			case "system", "user", "assistant":
			default:
				return req, invalid("messages[%d].role %q: want system, user or assistant", i, m.Role)
			}
			req.Messages = append(req.Messages, backend.Message{Role: m.Role, Content: m.Content})
		}
	default:
		return req, invalid("give prompt or messages")
	}
	size := len(in.Prompt)
	for _, m := range in.Messages {
		size += len(m.Content)
	}
	if size > maxPromptBytes {
		return req, invalid("the prompt is %d bytes; at most %d are taken", size, maxPromptBytes)
	}
	if in.MaxTokens < 0 {
		return req, invalid("max_tokens %d: want 0 or more", in.MaxTokens)
	}
	if in.MaxTokens > 0 {
		n := in.MaxTokens
		req.MaxTokens = &n
	}
	if t := in.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		return req, invalid("temperature %v: want 0 to 2", *t)
	}
	if in.Schema != nil {
		rf, err := json.Marshal(map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "answer", "schema": in.Schema, "strict": true}})
		if err != nil {
			return req, invalid("schema: %v", err)
		}
		req.ResponseFormat = rf
	}
	return req, nil
}

// progress sends notifications/progress for a call that asked for them,
// at most every progressEvery.
type progress struct {
	ctx   context.Context
	req   *mcp.CallToolRequest
	total float64
	n     int
	last  time.Time
}

func newProgress(ctx context.Context, req *mcp.CallToolRequest, total int) *progress {
	return &progress{ctx: ctx, req: req, total: float64(total)}
}

func (p *progress) token(d backend.Delta) error {
	p.n++
	tok := p.req.Params.GetProgressToken()
	if tok == nil || p.req.Session == nil {
		return nil
	}
	if now := time.Now(); p.n == 1 || now.Sub(p.last) >= progressEvery {
		p.last = now
		kind := "answer"
		if d.Reasoning != "" {
			kind = "reasoning"
		}
		// A failed notification must not end the generation.
		_ = p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
			Progress: float64(p.n), Total: p.total, Message: fmt.Sprintf("%d chunks generated (%s)", p.n, kind)})
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) generate(ctx context.Context, req *mcp.CallToolRequest, in GenerateIn) (*mcp.CallToolResult, GenerateOut, error) {
	creq, err := in.request()
	if err != nil {
		return nil, GenerateOut{}, err
	}
	res, err := s.cfg.Backend.Chat(ctx, creq, newProgress(ctx, req, in.MaxTokens).token)
	if err != nil {
		return nil, GenerateOut{}, toolErr(err)
	}
	out := GenerateOut{Text: res.Text, Reasoning: strings.TrimSpace(res.Reasoning), Model: res.Model, FinishReason: res.FinishReason,
		Usage:   Usage{res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.TotalTokens},
		Backend: res.Backend, Warnings: nonNil(res.Warnings)}
	text := out.Text
	if len(out.Warnings) > 0 {
		text += "\n\n[prism] " + strings.Join(out.Warnings, "; ")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func (s *Server) listModels(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ListModelsOut, error) {
	models, kind, warnings, err := s.cfg.Backend.Models(ctx)
	if err != nil {
		return nil, ListModelsOut{}, toolErr(err)
	}
	out := ListModelsOut{Models: []ModelInfo{}, Backend: kind, Warnings: nonNil(warnings)}
	for _, m := range models {
		out.Models = append(out.Models, ModelInfo{ID: m.ID, OwnedBy: m.OwnedBy})
	}
	return nil, out, nil
}

func (s *Server) status(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, StatusOut, error) {
	st, err := s.cfg.Backend.Status(ctx)
	if err != nil {
		return nil, StatusOut{}, toolErr(err)
	}
	return nil, StatusOut{Backend: st.Backend, BaseURL: st.BaseURL, ResidentModel: st.Model, Device: st.Device,
		FallbackReason: st.FallbackReason, Busy: st.Busy, QueueDepth: st.QueueDepth, MaxQueue: st.MaxQueue,
		VRAM: readVRAM(), Warnings: nonNil(st.Warnings)}, nil
}

// readVRAM reads this machine's GPUs through NVML; unavailable telemetry
// says why.
func readVRAM() VRAM {
	st := resources.ReadGPUs(resources.SystemNVML())
	v := VRAM{Available: st.Available, Unavailable: st.Cause(), GPUs: []GPUInfo{}}
	const mib = 1 << 20
	for _, g := range st.Devices {
		v.GPUs = append(v.GPUs, GPUInfo{Index: g.Index, Name: g.Name, TotalMB: float64(g.TotalBytes) / mib,
			UsedMB: float64(g.UsedBytes) / mib, FreeMB: float64(g.FreeBytes) / mib})
	}
	return v
}

func (s *Server) benchmark(ctx context.Context, req *mcp.CallToolRequest, in BenchmarkIn) (*mcp.CallToolResult, BenchmarkOut, error) {
	n := in.MaxTokens
	switch {
	case n < 0 || n > maxBenchmarkTokens:
		return nil, BenchmarkOut{}, invalid("max_tokens %d: want 1 to %d", n, maxBenchmarkTokens)
	case n == 0:
		n = defaultBenchTokens
	}
	prompt := in.Prompt
	if prompt == "" {
		prompt = benchmarkPrompt
	}
	if len(prompt) > maxPromptBytes {
		return nil, BenchmarkOut{}, invalid("the prompt is %d bytes; at most %d are taken", len(prompt), maxPromptBytes)
	}
	p := newProgress(ctx, req, n)
	var first time.Time
	start := time.Now()
	res, err := s.cfg.Backend.Chat(ctx, backend.ChatRequest{Model: in.Model, MaxTokens: &n,
		Messages: []backend.Message{{Role: "user", Content: prompt}}}, func(d backend.Delta) error {
		if first.IsZero() {
			first = time.Now()
		}
		return p.token(d)
	})
	if err != nil {
		return nil, BenchmarkOut{}, toolErr(err)
	}
	end := time.Now()
	out := BenchmarkOut{Model: res.Model, PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
		TotalMillis: ms(end.Sub(start)), Backend: res.Backend, Warnings: nonNil(res.Warnings)}
	if !first.IsZero() {
		out.TTFTMillis = ms(first.Sub(start))
		if d := end.Sub(first).Seconds(); d > 0 && out.CompletionTokens > 1 {
			out.TokensPerSecond = float64(out.CompletionTokens-1) / d
		}
	}
	if st, err := s.cfg.Backend.Status(ctx); err == nil {
		out.Device = st.Device
	}
	return nil, out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
