// Package ollamatest is a fake Ollama daemon for tests, as net/http/httptest
// is a fake server: a real HTTP server on loopback that speaks Ollama's
// wire format (GET /api/tags, POST /api/chat as NDJSON, POST /api/embed)
// and answers from a script, with the failures a real daemon shows (an
// error line mid-stream, a connection cut off, an answer that never comes).
package ollamatest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prism-local/prism/engine/ollama"
)

// Failure is how a scripted answer goes wrong.
type Failure uint8

// The failures.
const (
	// None: the answer ends with a final done chunk.
	None Failure = iota
	// ErrorLine: an {"error": ...} line instead of the next chunk, as
	// Ollama sends when its runner fails mid-answer.
	ErrorLine
	// Cut: the connection is aborted instead of the next chunk.
	Cut
	// Hang: nothing more is sent until the client goes away.
	Hang
)

// Answer scripts the reply to a chat request.
type Answer struct {
	// Chunks are sent one stream line each, in order.
	Chunks []ollama.Chunk
	// DoneReason is the final chunk's done_reason ("" for "stop").
	DoneReason string
	// PromptTokens and CompletionTokens are the final chunk's
	// prompt_eval_count and eval_count.
	PromptTokens, CompletionTokens int
	// Fail, when not None, replaces what follows chunk FailAfter (0: fail
	// before the first chunk).
	Fail      Failure
	FailAfter int
}

// Model is a model the fake has.
type Model struct {
	Name string
	// Answer is the reply to every chat request for the model.
	Answer Answer
	// Dims is the length of the vectors /api/embed gives (0: 4); the
	// vectors are a hash of the input, the same for the same text.
	Dims int
	// NoTools makes chat requests with tools fail as Ollama fails them for
	// a model whose template has no tools (HTTP 400).
	NoTools bool
}

// Server is the fake daemon.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	models   []Model
	chats    []json.RawMessage
	status   int
	released chan struct{}
	once     sync.Once
}

// New starts a fake with models; it is closed when the test ends.
func New(t testing.TB, models ...Model) *Server {
	s := &Server{models: models, released: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/tags", s.tags)
	mux.HandleFunc("POST /api/chat", s.chat)
	mux.HandleFunc("POST /api/embed", s.embed)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Close releases hanging answers and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.released) })
	s.Server.Close()
}

// FailAll makes every endpoint answer status with an error body (0 undoes it).
func (s *Server) FailAll(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Chats returns the bodies of the chat requests received so far.
func (s *Server) Chats() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.chats)
}

func (s *Server) failing(w http.ResponseWriter) bool {
	s.mu.Lock()
	status := s.status
	s.mu.Unlock()
	if status == 0 {
		return false
	}
	writeJSON(w, status, map[string]string{"error": "scripted failure"})
	return true
}

func (s *Server) model(name string) (Model, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.models {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

func (s *Server) tags(w http.ResponseWriter, r *http.Request) {
	if s.failing(w) {
		return
	}
	type entry struct {
		Name       string              `json:"name"`
		Model      string              `json:"model"`
		ModifiedAt time.Time           `json:"modified_at"`
		Size       int64               `json:"size"`
		Digest     string              `json:"digest"`
		Details    ollama.ModelDetails `json:"details"`
	}
	out := struct {
		Models []entry `json:"models"`
	}{Models: []entry{}}
	s.mu.Lock()
	for _, m := range s.models {
		out.Models = append(out.Models, entry{Name: m.Name, Model: m.Name, ModifiedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
			Size: 1 << 30, Digest: fmt.Sprintf("%x", fnv.New64a().Sum([]byte(m.Name))),
			Details: ollama.ModelDetails{Format: "gguf", Family: "llama", Families: []string{"llama"}, ParameterSize: "3.2B", QuantizationLevel: "Q4_K_M"}})
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string            `json:"model"`
		Tools []json.RawMessage `json:"tools"`
	}
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil || json.Unmarshal(raw, &req) != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid request body"})
		return
	}
	s.mu.Lock()
	s.chats = append(s.chats, raw)
	s.mu.Unlock()
	if s.failing(w) {
		return
	}
	m, ok := s.model(req.Model)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model %q not found, try pulling it first", req.Model)})
		return
	}
	if m.NoTools && len(req.Tools) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("registry.ollama.ai/library/%s does not support tools", m.Name)})
		return
	}
	s.stream(w, r, m)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, m Model) {
	a := m.Answer
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	line := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = w.Write(append(b, '\n'))
		if fl != nil {
			fl.Flush()
		}
	}
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; ; i++ {
		if a.Fail != None && i == a.FailAfter {
			switch a.Fail {
			case ErrorLine:
				line(map[string]string{"error": "an error was encountered while running the model: unexpected EOF"})
			case Cut:
				panic(http.ErrAbortHandler)
			case Hang:
				select {
				case <-r.Context().Done():
				case <-s.released:
				}
			}
			return
		}
		if i == len(a.Chunks) {
			break
		}
		c := a.Chunks[i]
		line(map[string]any{"model": m.Name, "created_at": created, "done": false,
			"message": ollama.Message{Role: "assistant", Content: c.Content, Thinking: c.Thinking, ToolCalls: c.ToolCalls}})
	}
	reason := a.DoneReason
	if reason == "" {
		reason = "stop"
	}
	line(map[string]any{"model": m.Name, "created_at": created, "done": true, "done_reason": reason,
		"message":        ollama.Message{Role: "assistant", Content: ""},
		"total_duration": 5_000_000, "load_duration": 1_000_000, "prompt_eval_count": a.PromptTokens,
		"prompt_eval_duration": 1_000_000, "eval_count": a.CompletionTokens, "eval_duration": 3_000_000})
}

func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model      string `json:"model"`
		Input      any    `json:"input"`
		Dimensions int    `json:"dimensions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid request body"})
		return
	}
	if s.failing(w) {
		return
	}
	m, ok := s.model(req.Model)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model %q not found, try pulling it first", req.Model)})
		return
	}
	var inputs []string
	switch v := req.Input.(type) {
	case string:
		inputs = []string{v}
	case []any:
		for _, x := range v {
			t, _ := x.(string)
			inputs = append(inputs, t)
		}
	}
	dims := m.Dims
	if dims == 0 {
		dims = 4
	}
	if req.Dimensions > 0 && req.Dimensions < dims {
		dims = req.Dimensions
	}
	out := struct {
		Model           string      `json:"model"`
		Embeddings      [][]float32 `json:"embeddings"`
		TotalDuration   int64       `json:"total_duration"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}{Model: m.Name, Embeddings: [][]float32{}, TotalDuration: 1_000_000}
	for _, in := range inputs {
		out.Embeddings = append(out.Embeddings, Vector(in, dims))
		out.PromptEvalCount += len(in)/4 + 1
	}
	writeJSON(w, http.StatusOK, out)
}

// Vector is the vector the fake gives text: dims values in [0, 1) from a
// hash of it.
func Vector(text string, dims int) []float32 {
	v := make([]float32, dims)
	h := fnv.New64a()
	for i := range v {
		h.Write([]byte(text))
		v[i] = float32(h.Sum64()%1000) / 1000
	}
	return v
}

// PromptTokens is the prompt_eval_count the fake reports for embedding text.
func PromptTokens(text string) int { return len(text)/4 + 1 }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
