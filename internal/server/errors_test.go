package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/templates"
	"github.com/prism-local/prism/tools"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   string
		param  string
		retry  time.Duration
		holder *wire.Holder
	}{
		{"wire", &wire.Error{Status: 413, ErrCode: wire.CodeRequestTooLarge, Message: "big"}, 413, wire.CodeRequestTooLarge, "", 0, nil},
		{"not found", &catalog.Error{ErrCode: catalog.CodeModelNotFound, Name: "x"}, 404, catalog.CodeModelNotFound, "model", 0, nil},
		{"ambiguous", &catalog.Error{ErrCode: catalog.CodeAmbiguousModel, Name: "q"}, 400, catalog.CodeAmbiguousModel, "model", 0, nil},
		{"tool_choice", narrowErr(t), 400, "invalid_request_error", "tool_choice", 0, nil},
		{"template", &templates.TemplateRenderError{Model: "m", Err: errors.New("boom")}, 400, CodeTemplateRenderFailed, "", 0, nil},
		{"sampling", fmt.Errorf("stream: %w", &engine.InvalidRequestError{Param: "top_p", Message: "bad"}), 400, "invalid_request_error", "top_p", 0, nil},
		{"context", &engine.ContextLengthError{PromptTokens: 300, ContextLength: 256}, 400, CodeContextLength, "messages", 0, nil},
		{"queue full", &engine.ServerBusyError{Reason: "full"}, 503, CodeServerBusy, "", 0, nil},
		{"queue timeout", &engine.ServerBusyError{Reason: "timeout", RetryAfter: 30 * time.Second}, 503, CodeServerBusy, "", 30 * time.Second, nil},
		{"load", &engine.ModelLoadError{Model: "m", File: "config.json", Err: errors.New("bad")}, 500, CodeModelLoadFailed, "", 0, nil},
		{"lock held", &engine.ModelLoadError{Model: "m", Err: &lock.TimeoutError{Model: "m", Holder: &lock.Holder{PID: 42, Model: "other"}}},
			503, CodeInsufficient, "", 30 * time.Second, &wire.Holder{PID: 42, Model: "other"}},
		{"lock held, holder unknown", &lock.TimeoutError{Model: "m"}, 503, CodeInsufficient, "", 30 * time.Second, nil},
		{"closed", engine.ErrClosed, 503, "engine_closed", "", 0, nil},
		{"other", errors.New("what"), 500, CodeServerError, "", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := classify(tt.err)
			if e.status != tt.status || e.code != tt.code || e.param != tt.param || e.retryAfter != tt.retry ||
				(e.holder == nil) != (tt.holder == nil) || (e.holder != nil && *e.holder != *tt.holder) {
				t.Errorf("got %d %s %q retry %s holder %v", e.status, e.code, e.param, e.retryAfter, e.holder)
			}
		})
	}
}

// A client that left gets no body at all.
func TestWriteErrorClientGone(t *testing.T) {
	s := &Server{log: discard()}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	s.writeError(rec, r, &engine.ClientDisconnectedError{Err: context.Canceled})
	if rec.Body.Len() != 0 {
		t.Errorf("wrote %q", rec.Body.String())
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// narrowErr is the tools package's error for a tool_choice naming no
// offered tool.
func narrowErr(t *testing.T) error {
	t.Helper()
	_, err := tools.Narrow(json.RawMessage(`{"type":"function","function":{"name":"nope"}}`),
		[]json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"a"}}`)}, tools.FormatHermes)
	if err == nil {
		t.Fatal("Narrow accepted a tool_choice naming no tool")
	}
	return err
}
