package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/prism-local/prism/internal/app/jsonrpc"
)

// session is one conversation: its history, model and the prompt in flight.
type session struct {
	id, cwd string

	mu       sync.Mutex
	model    string
	models   []string
	messages []Message
	busy     bool
	stop     context.CancelFunc // the prompt in flight's
	calls    int                // tool call ids issued
}

func newSession(id, cwd, model string, models []string) *session {
	return &session{id: id, cwd: cwd, model: model, models: models}
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *session) configOptions() []configOption {
	s.mu.Lock()
	defer s.mu.Unlock()
	opts := make([]selectOption, 0, len(s.models))
	for _, m := range s.models {
		opts = append(opts, selectOption{Value: m, Name: m})
	}
	return []configOption{{ID: ConfigModel, Name: "Model", Category: "model", Type: "select",
		Description: "The model that answers this session's prompts", CurrentValue: s.model, Options: opts}}
}

func (s *session) setModel(m string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.models, m) {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown model %q; the session offers %v", clip(m), s.models)
	}
	s.model = m
	return nil
}

// begin marks the session busy with a prompt whose context stop ends;
// false when a prompt is already in flight.
func (s *session) begin(stop context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return false
	}
	s.busy, s.stop = true, stop
	return true
}

func (s *session) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy, s.stop = false, nil
}

func (s *session) cancelPrompt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
}

// history returns the model and a copy of the messages.
func (s *session) history() (string, []Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model, slices.Clone(s.messages)
}

func (s *session) setHistory(m []Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = m
}

func (s *session) nextCallID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.calls
}
