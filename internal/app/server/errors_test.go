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

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/engine/onnx"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/lock"
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
		{"tool_choice", toolChoiceErr(t), 400, "invalid_request_error", "tool_choice", 0, nil},
		{"template", &prism.RequestError{ErrCode: CodeTemplateRenderFailed, Message: "boom"}, 400, CodeTemplateRenderFailed, "", 0, nil},
		{"sampling", fmt.Errorf("stream: %w", &engine.InvalidRequestError{Param: "top_p", Message: "bad"}), 400, "invalid_request_error", "top_p", 0, nil},
		{"context", &engine.ContextLengthError{PromptTokens: 300, ContextLength: 256}, 400, CodeContextLength, "messages", 0, nil},
		{"queue full", &engine.ServerBusyError{Reason: "full"}, 503, CodeServerBusy, "", 0, nil},
		{"queue timeout", &engine.ServerBusyError{Reason: "timeout", RetryAfter: 30 * time.Second}, 503, CodeServerBusy, "", 30 * time.Second, nil},
		{"load", &engine.ModelLoadError{Model: "m", File: "config.json", Err: errors.New("bad")}, 500, CodeModelLoadFailed, "", 0, nil},
		{"lock held", &engine.ModelLoadError{Model: "m", Err: &lock.TimeoutError{Model: "m", Holder: &lock.Holder{PID: 42, Model: "other"}}},
			503, CodeInsufficient, "", 30 * time.Second, &wire.Holder{PID: 42, Model: "other"}},
		{"lock held, holder unknown", &lock.TimeoutError{Model: "m"}, 503, CodeInsufficient, "", 30 * time.Second, nil},
		{"closed", engine.ErrClosed, 503, "engine_closed", "", 0, nil},
		{"no tokenizer", fmt.Errorf("stream: %w", &engine.NoTokenizerError{Model: "m", File: "tokenizer.json", Param: "stop", Err: errors.New("absent")}), 400, "invalid_request_error", "stop", 0, nil},
		{"ollama lacks the model", &ollama.Error{ErrCode: errcode.ModelNotFound, Message: "no"}, 404, "model_not_found", "model", 0, nil},
		{"ollama refuses tools", &ollama.Error{ErrCode: errcode.ToolsNotSupported, Message: "no"}, 400, "tools_not_supported", "tools", 0, nil},
		{"ollama unreachable", &ollama.Error{ErrCode: errcode.BackendUnavailable, Message: "down"}, 502, "backend_unavailable", "", 0, nil},
		{"inference", &onnx.StepError{Err: errors.New("runtime")}, 500, "inference_failed", "", 0, nil},
		{"deadline", fmt.Errorf("load: %w", context.DeadlineExceeded), 504, CodeServerError, "", 0, nil},
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
// toolChoiceErr is the chat layer's refusal of a malformed tool_choice.
func toolChoiceErr(t *testing.T) error {
	t.Helper()
	_, err := prism.ParseToolChoice(json.RawMessage(`{"type":"function"}`))
	if err == nil {
		t.Fatal("ParseToolChoice accepted a tool_choice naming no function")
	}
	return err
}
