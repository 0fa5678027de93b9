package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/hub"
)

// PullFunc pulls model ("OWNER/NAME[:VARIANT]") at revision from the
// Hugging Face hub, sending progress one report at a time, and returns
// the catalog scanned again, which then holds the model.
type PullFunc func(ctx context.Context, model, revision string, progress func(hub.Progress)) (*hub.Result, *catalog.Catalog, error)

// pullRequest is the body of POST /api/pull.
type pullRequest struct {
	Model    string `json:"model"`
	Revision string `json:"revision,omitempty"`
	// Stream sends JSON lines of progress (the default); false answers
	// once, when the pull is done.
	Stream *bool `json:"stream,omitempty"`
}

// pullEvent is one line of the stream, and the one answer without it.
type pullEvent struct {
	Status           string            `json:"status"`
	Model            string            `json:"model"`
	File             string            `json:"file,omitempty"`
	FileCompleted    int64             `json:"file_completed,omitempty"`
	FileTotal        int64             `json:"file_total,omitempty"`
	Completed        int64             `json:"completed"`
	Total            int64             `json:"total"`
	Files            int               `json:"files"`
	FilesDone        int               `json:"files_done"`
	BytesPerSecond   float64           `json:"bytes_per_second,omitempty"`
	RemainingSeconds float64           `json:"remaining_seconds,omitempty"`
	Commit           string            `json:"commit,omitempty"`
	Variant          string            `json:"variant,omitempty"`
	Error            *wire.ErrorObject `json:"error,omitempty"`
}

// catalog is the catalog in force: the one the server started with, or
// the one a pull scanned since.
func (s *Server) catalog() *catalog.Catalog { return s.cat.Load() }

// pull serves POST /api/pull: progress as JSON lines
// (application/x-ndjson), as Ollama's /api/pull streams it, ending with
// {"status":"success"} or {"status":"error","error":{...}}. Failures the
// pull meets before its first byte is downloaded (an unknown or gated
// repository, no loadable graph, a bad name) are answered as ordinary
// error responses, before any header is written.
func (s *Server) pull(w http.ResponseWriter, r *http.Request) {
	var req pullRequest
	if err := decodeStrict(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Model == "" {
		s.writeError(w, r, &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: "model", message: "model is required: OWNER/NAME[:VARIANT] as on the Hugging Face hub"})
		return
	}
	stream := req.Stream == nil || *req.Stream
	started := false
	progress := func(p hub.Progress) {
		if !stream || p.Status == hub.StatusListing {
			return
		}
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		writeLine(w, progressEvent(req.Model, p))
	}
	res, cat, err := s.cfg.Pull(r.Context(), req.Model, req.Revision, progress)
	if err == nil {
		s.cat.Store(cat)
		done := pullEvent{Status: "success", Model: res.Repo, Completed: res.Bytes, Total: res.Bytes, Files: len(res.Files),
			FilesDone: len(res.Files), Commit: res.Commit, Variant: res.Variant}
		if !started {
			writeJSON(w, http.StatusOK, done)
			return
		}
		writeLine(w, done)
		return
	}
	if !started {
		s.writeError(w, r, pullError(err))
		return
	}
	if r.Context().Err() == nil {
		e := pullError(err)
		body := wire.NewErrorBody(e.status, e.code, e.param, e.message)
		writeLine(w, pullEvent{Status: "error", Model: req.Model, Error: &body.Error})
	}
}

// pullError gives a pull's failure its HTTP status.
func pullError(err error) *apiError {
	status := map[string]int{
		errcode.InvalidArgument:       http.StatusBadRequest,
		errcode.ModelNotFound:         http.StatusNotFound,
		errcode.HubAccessDenied:       http.StatusForbidden,
		errcode.ModelLoadFailed:       http.StatusUnprocessableEntity,
		errcode.HubUnavailable:        http.StatusBadGateway,
		errcode.DownloadCorrupt:       http.StatusBadGateway,
		errcode.InsufficientResources: http.StatusInsufficientStorage,
		errcode.InvalidSetting:        http.StatusInternalServerError,
	}
	code := errcode.Of(err)
	if st, ok := status[code]; ok {
		return &apiError{status: st, code: code, param: "model", message: err.Error()}
	}
	return classify(err)
}

func progressEvent(model string, p hub.Progress) pullEvent {
	return pullEvent{Status: p.Status, Model: model, File: p.File, FileCompleted: p.FileBytes, FileTotal: p.FileSize,
		Completed: p.Bytes, Total: p.Total, Files: p.Files, FilesDone: p.FilesDone, BytesPerSecond: p.Rate,
		RemainingSeconds: p.Remaining.Seconds(), Commit: p.Commit, Variant: p.Variant}
}

// writeLine writes v as one JSON line and flushes it.
func writeLine(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	_, _ = w.Write(append(b, '\n'))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
