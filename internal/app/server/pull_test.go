package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/hub"
	"github.com/prism-local/prism/internal/hubtest"
	"github.com/prism-local/prism/internal/onnxgen"
)

// pullServer serves a scripted Manager and POST /api/pull over a fake
// hub holding onnx-community/Tiny-ONNX (fp32 and q4) and a gated copy.
func pullServer(t *testing.T) (*hubtest.Hub, string) {
	t.Helper()
	cfg := onnxgen.Tiny()
	cfg.Variants = []string{"fp32", "q4"}
	dir := t.TempDir()
	if err := onnxgen.Write(t.Context(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t)
	h.AddModel(t, "onnx-community/Tiny-ONNX", dir)
	h.AddModel(t, "gated/Tiny-ONNX", dir).Gated = true
	cache := t.TempDir()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &hub.Client{Endpoint: h.URL, HTTP: &http.Client{Transport: tr}, Retry: hub.Retry{Attempts: 2, Base: time.Millisecond}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr, err := engine.NewManager(func(ctx context.Context, key string) (*engine.Engine, error) {
		return engine.New(enginetest.NewBackend("hi", 0), enginetest.ByteTokenizer{}, engine.WithLogger(logger))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	pull := func(ctx context.Context, model, revision string, progress func(hub.Progress)) (*hub.Result, *catalog.Catalog, error) {
		repo, variant, err := hub.ParseModelRef(model)
		if err != nil {
			return nil, nil, err
		}
		res, err := client.Pull(ctx, hub.Request{Repo: repo, Variant: variant, Revision: revision, Cache: cache, Progress: progress})
		if err != nil {
			return nil, nil, err
		}
		cat, err := catalog.Scan(ctx, catalog.Sources{HubCache: cache})
		return res, cat, err
	}
	cat, err := catalog.Scan(t.Context(), catalog.Sources{HubCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Manager: mgr, Catalog: cat, Loopback: true, Logger: logger, Pull: pull})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return h, ts.URL
}

type pullLine struct {
	Status    string `json:"status"`
	Model     string `json:"model"`
	Completed int64  `json:"completed"`
	Total     int64  `json:"total"`
	Variant   string `json:"variant"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func postPull(t *testing.T, url, body string) (*http.Response, []pullLine) {
	t.Helper()
	resp, err := http.Post(url+"/api/pull", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []pullLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l pullLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return resp, lines
}

func TestPullEndpoint(t *testing.T) {
	h, url := pullServer(t)
	if got := getHealth(t, url); !got.Pull {
		t.Errorf("/health does not say pulls are served: %+v", got)
	}
	resp, lines := postPull(t, url, `{"model":"onnx-community/Tiny-ONNX:q4"}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	last := lines[len(lines)-1]
	if len(lines) < 3 || lines[0].Status != "downloading" || last.Status != "success" || last.Variant != "q4" || last.Completed != last.Total || last.Total == 0 {
		t.Fatalf("lines %+v", lines)
	}
	// The model is served at once.
	models, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer models.Body.Close()
	if b, _ := io.ReadAll(models.Body); !strings.Contains(string(b), `"onnx-community/Tiny-ONNX"`) {
		t.Fatalf("/v1/models after the pull: %s", b)
	}
	cases := []struct {
		name, body string
		status     int
		code, says string
	}{
		{"gated", `{"model":"gated/Tiny-ONNX"}`, http.StatusForbidden, "hub_access_denied", "HF_TOKEN"},
		{"unknown", `{"model":"onnx-community/Nope","stream":false}`, http.StatusNotFound, "model_not_found", "not found"},
		{"bad name", `{"model":"../x"}`, http.StatusBadRequest, "invalid_argument", "OWNER/NAME"},
		{"no model", `{}`, http.StatusBadRequest, "invalid_request_error", "model is required"},
		{"unknown field", `{"model":"a/b","insecure":true}`, http.StatusBadRequest, "unknown_parameter", "insecure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, lines := postPull(t, url, tc.body)
			if resp.StatusCode != tc.status || len(lines) != 1 || lines[0].Error == nil || lines[0].Error.Code != tc.code || !strings.Contains(lines[0].Error.Message, tc.says) {
				t.Fatalf("%s %+v", resp.Status, lines)
			}
		})
	}
	// A failure after the download began ends the stream with an error line.
	h.Corrupt("onnx/model.onnx_data")
	resp, lines = postPull(t, url, `{"model":"onnx-community/Tiny-ONNX:fp32"}`)
	last = lines[len(lines)-1]
	if resp.StatusCode != http.StatusOK || last.Status != "error" || last.Error == nil || last.Error.Code != "download_corrupt" {
		t.Fatalf("%s %+v", resp.Status, lines)
	}
	// Without stream, one answer.
	resp, lines = postPull(t, url, `{"model":"onnx-community/Tiny-ONNX:q4","stream":false}`)
	if resp.StatusCode != http.StatusOK || len(lines) != 1 || lines[0].Status != "success" {
		t.Fatalf("%s %+v", resp.Status, lines)
	}
}

func getHealth(t *testing.T, url string) wire.Health {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h wire.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}
