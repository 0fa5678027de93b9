package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/lock"
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
	// CodeMethodNotAllowed is a served path asked with another method.
	CodeMethodNotAllowed = "method_not_allowed"
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

// statuses is docs/api.md's error table: the HTTP status of each code the
// packages below give. A code missing here is a 500.
var statuses = map[string]int{
	errcode.InvalidRequest:        http.StatusBadRequest,
	errcode.UnknownParameter:      http.StatusBadRequest,
	errcode.UnsupportedParameter:  http.StatusBadRequest,
	errcode.TemplateRenderFailed:  http.StatusBadRequest,
	errcode.ContextLengthExceeded: http.StatusBadRequest,
	errcode.AmbiguousModel:        http.StatusBadRequest,
	errcode.ToolsNotSupported:     http.StatusBadRequest,
	errcode.ToolChoiceUnsatisfied: http.StatusBadRequest,
	errcode.ModelNotFound:         http.StatusNotFound,
	errcode.RequestTooLarge:       http.StatusRequestEntityTooLarge,
	errcode.ModelLoadFailed:       http.StatusInternalServerError,
	errcode.InferenceFailed:       http.StatusInternalServerError,
	errcode.BackendUnavailable:    http.StatusBadGateway,
	errcode.ServerBusy:            http.StatusServiceUnavailable,
	errcode.EngineClosed:          http.StatusServiceUnavailable,
	errcode.InsufficientResources: http.StatusServiceUnavailable,
}

// classify maps an error of the packages the server calls to what the
// client is told (docs/api.md, the error table): its code's status, the
// parameter it blames, and the message of the error that gave the code. An *apiError and a *wire.Error carry
// their own status; a *prism.RequestError is the request's fault (400)
// whatever its code.
func classify(err error) *apiError {
	var (
		ae  *apiError
		we  *wire.Error
		re  *prism.RequestError
		lte *lock.TimeoutError
		sbe *engine.ServerBusyError
	)
	if errors.As(err, &ae) {
		return ae
	}
	code := errcode.Of(err)
	e := &apiError{status: http.StatusInternalServerError, code: code, param: errcode.Param(err), message: err.Error()}
	var coded errcode.Coder
	if errors.As(err, &coded) {
		e.message = coded.Error() // the typed error's own words, without the callers' prefixes
	}
	switch {
	case errors.As(err, &we):
		e.status, e.message = we.Status, we.Message
	case errors.As(err, &re):
		e.status, e.message = http.StatusBadRequest, re.Message
	case errors.As(err, &lte):
		// Another process holds the model-load lock: the resources are
		// taken (spec P12), and the holder is named when it recorded itself.
		e.status, e.code, e.retryAfter = http.StatusServiceUnavailable, CodeInsufficient, 30*time.Second
		if lte.Holder != nil {
			e.holder = &wire.Holder{PID: lte.Holder.PID, Model: lte.Holder.Model}
		}
	case code == "" && errors.Is(err, context.DeadlineExceeded):
		e.status, e.code = http.StatusGatewayTimeout, CodeServerError
	case code == "":
		e.code = CodeServerError
	default:
		if st, ok := statuses[code]; ok {
			e.status = st
		}
	}
	switch {
	case errors.As(err, &sbe):
		e.retryAfter = sbe.RetryAfter
	case e.code == CodeInsufficient:
		e.retryAfter = 30 * time.Second
	case errors.Is(err, engine.ErrClosed):
		e.message = "the server is shutting down"
	}
	return e
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

// midStream logs the failure of the generation behind the streamed
// answer id and reports whether the client left. A client that leaves is
// not an error: it is logged at INFO, and nothing more is written.
func (s *Server) midStream(id string, err error) (gone bool) {
	var cd *engine.ClientDisconnectedError
	if errors.As(err, &cd) || errors.Is(err, context.Canceled) {
		s.clientLeft(id, err)
		return true
	}
	s.log.Error("generation failed mid-stream", "id", id, "err", err)
	return false
}

// clientLeft logs, at INFO, a client that left the streamed answer id,
// whether the generation saw it first (its context ended) or the writer did
// (a write to the closed connection failed).
func (s *Server) clientLeft(id string, err error) {
	s.log.Info("client left mid-stream", "id", id, "err", err)
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
