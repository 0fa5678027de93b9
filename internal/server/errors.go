package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/templates"
	"github.com/prism-local/prism/tools"
)

// Codes the server gives: errcode's where it defines them, and the few
// that only the HTTP layer has.
const (
	CodeInvalidAPIKey        = errcode.InvalidAPIKey
	CodeNotFound             = errcode.NotFound
	CodeTemplateRenderFailed = errcode.TemplateRenderFailed
	CodeContextLength        = errcode.ContextLengthExceeded
	CodeModelLoadFailed      = errcode.ModelLoadFailed
	CodeInsufficient         = errcode.InsufficientResources
	CodeServerBusy           = errcode.ServerBusy
	// CodeForbiddenHost refuses a non-loopback Host on a loopback bind.
	CodeForbiddenHost = "forbidden_host"
	// CodeServerError is an unexpected failure (type server_error).
	CodeServerError = "server_error"
	// CodeUnsupportedModel is an endpoint the named model cannot serve.
	CodeUnsupportedModel = "unsupported_model"
)

// apiError is an error on its way to the client: its status, body fields
// and, for 503s that should be retried, the Retry-After delay.
type apiError struct {
	status     int
	code       string
	param      string
	message    string
	retryAfter time.Duration
	// holder is the process holding the model-load lock, on a 503
	// insufficient_resources (spec P12); nil when unknown.
	holder *wire.Holder
}

func (e *apiError) Error() string { return e.message }

// Code returns the error's code.
func (e *apiError) Code() string { return e.code }

// classify maps an error of the packages the server calls to what the
// client is told (docs/api.md, the error table).
func classify(err error) *apiError {
	var (
		ae   *apiError
		we   *wire.Error
		ce   *catalog.Error
		te   *tools.Error
		tre  *templates.TemplateRenderError
		ire  *engine.InvalidRequestError
		cle  *engine.ContextLengthError
		sbe  *engine.ServerBusyError
		mle  *engine.ModelLoadError
		se   *grammar.SchemaError
		lte  *lock.TimeoutError
		oe   *ollama.Error
		code = errcode.Of(err)
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &oe):
		return ollamaError(oe)
	case errors.As(err, &we):
		return &apiError{status: we.Status, code: we.ErrCode, param: we.Param, message: we.Message}
	case errors.As(err, &ce):
		status := http.StatusBadRequest
		if ce.ErrCode == catalog.CodeModelNotFound {
			status = http.StatusNotFound
		}
		return &apiError{status: status, code: ce.ErrCode, param: "model", message: ce.Error()}
	case errors.As(err, &te):
		return &apiError{status: http.StatusBadRequest, code: te.Code(), param: te.Param, message: te.Message}
	case errors.As(err, &tre):
		return &apiError{status: http.StatusBadRequest, code: CodeTemplateRenderFailed, message: tre.Error()}
	case errors.As(err, &se):
		return &apiError{status: http.StatusBadRequest, code: se.Code(), param: se.Param, message: se.Error()}
	case errors.As(err, &ire):
		return &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: ire.Param, message: ire.Error()}
	case errors.As(err, &cle):
		return &apiError{status: http.StatusBadRequest, code: CodeContextLength, param: "messages", message: cle.Error()}
	case errors.As(err, &sbe):
		return &apiError{status: http.StatusServiceUnavailable, code: CodeServerBusy, message: sbe.Error(), retryAfter: sbe.RetryAfter}
	case errors.As(err, &lte):
		e := &apiError{status: http.StatusServiceUnavailable, code: CodeInsufficient, message: err.Error(), retryAfter: 30 * time.Second}
		if lte.Holder != nil {
			e.holder = &wire.Holder{PID: lte.Holder.PID, Model: lte.Holder.Model}
		}
		return e
	case code == CodeInsufficient:
		return &apiError{status: http.StatusServiceUnavailable, code: code, message: err.Error(), retryAfter: 30 * time.Second}
	case errors.As(err, &mle):
		return &apiError{status: http.StatusInternalServerError, code: CodeModelLoadFailed, message: err.Error()}
	case errors.Is(err, engine.ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, code: code, message: "the server is shutting down"}
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusGatewayTimeout, code: CodeServerError, message: err.Error()}
	}
	if code == "" {
		code = CodeServerError
	}
	return &apiError{status: http.StatusInternalServerError, code: code, message: err.Error()}
}

// ollamaError maps a failure of Ollama's: it is unreachable or failing
// (502), it lacks the model (404), or it refused the request (400).
func ollamaError(oe *ollama.Error) *apiError {
	switch oe.ErrCode {
	case errcode.ModelNotFound:
		return &apiError{status: http.StatusNotFound, code: oe.ErrCode, param: "model", message: oe.Error()}
	case errcode.ToolsNotSupported:
		return &apiError{status: http.StatusBadRequest, code: oe.ErrCode, param: "tools", message: oe.Error()}
	case errcode.InvalidRequest:
		return &apiError{status: http.StatusBadRequest, code: oe.ErrCode, message: oe.Error()}
	}
	return &apiError{status: http.StatusBadGateway, code: errcode.BackendUnavailable, message: oe.Error()}
}

// writeError sends err as the JSON error body. A client that has gone
// (ClientDisconnectedError) gets nothing: there is no one to read it.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var gone *engine.ClientDisconnectedError
	if errors.As(err, &gone) || r.Context().Err() != nil {
		s.log.Debug("client left before the answer", "path", r.URL.Path, "err", err)
		return
	}
	e := classify(err)
	if e.status >= 500 {
		s.log.Error("request failed", "path", r.URL.Path, "status", e.status, "code", e.code, "err", err)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.retryAfter/time.Second)))
	}
	body := wire.NewErrorBody(e.status, e.code, e.param, e.message)
	body.Error.Holder = e.holder
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("encode response", "err", err)
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encode response","type":"server_error","code":"server_error","param":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
