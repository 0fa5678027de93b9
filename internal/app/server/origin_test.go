//go:build cgo

package server_test

import (
	"encoding/json"
	"github.com/prism-local/prism/internal/app/wire"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prism-local/prism/internal/app/server"
)

// The origin policy (docs/api.md, "Web pages"): what a foreign page can
// send — a no-cors fetch, a form, a beacon, a CORS request — is refused
// before anything happens, on every endpoint; the server's own pages,
// -cors-origin origins and clients without an Origin pass.
func TestOriginPolicy(t *testing.T) {
	var drains atomic.Int32
	ts := start(t, nil, func(c *server.Config) {
		c.CORSOrigins = []string{"https://app.example"}
		c.Drain = func() { drains.Add(1) }
	})
	chat := `{"model":"think","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	if resp, body := post(t, ts, chat, nil); resp.StatusCode != 200 {
		t.Fatalf("warm-up chat: %d %v", resp.StatusCode, body)
	}
	own := strings.TrimPrefix(ts.url, "http://")
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		header      map[string]string
		status      int
		code        string
		allowOrigin string
	}{
		{"foreign origin drains", "POST", "/v1/drain", "text/plain;charset=UTF-8", "", map[string]string{"Origin": "http://127.0.0.1:9"}, 403, "forbidden_origin", ""},
		{"foreign origin unloads", "POST", "/v1/unload", "application/json", "{}", map[string]string{"Origin": "https://evil.example"}, 403, "forbidden_origin", ""},
		{"foreign origin chats", "POST", "/v1/chat/completions", "text/plain", chat, map[string]string{"Origin": "https://evil.example"}, 403, "forbidden_origin", ""},
		{"foreign origin reads models", "GET", "/v1/models", "", "", map[string]string{"Origin": "https://evil.example"}, 403, "forbidden_origin", ""},
		{"null origin", "POST", "/v1/unload", "", "", map[string]string{"Origin": "null"}, 403, "forbidden_origin", ""},
		{"same site, other port", "POST", "/v1/unload", "", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "forbidden_origin", ""},
		{"cross site without origin", "GET", "/health", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "forbidden_origin", ""},
		{"private network preflight", "OPTIONS", "/v1/drain", "", "", map[string]string{"Origin": "https://evil.example",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Private-Network": "true"}, 403, "forbidden_origin", ""},
		{"form body", "POST", "/v1/chat/completions", "application/x-www-form-urlencoded", "a=b", nil, 415, "unsupported_media_type", ""},
		{"multipart body", "POST", "/v1/unload", "multipart/form-data; boundary=x", "--x--", nil, 415, "unsupported_media_type", ""},
		{"text body", "POST", "/v1/drain", "text/plain", "{}", nil, 415, "unsupported_media_type", ""},
		{"body without a type", "POST", "/v1/chat/completions", "", chat, nil, 415, "unsupported_media_type", ""},
		{"own page", "GET", "/v1/models", "", "", map[string]string{"Origin": "http://" + own, "Sec-Fetch-Site": "same-origin"}, 200, "", ""},
		{"own page, localhost", "GET", "/health", "", "", map[string]string{"Origin": "http://" + strings.Replace(own, "127.0.0.1", "localhost", 1),
			"Host": strings.Replace(own, "127.0.0.1", "localhost", 1)}, 200, "", ""},
		{"typed navigation", "GET", "/health", "", "", map[string]string{"Sec-Fetch-Site": "none"}, 200, "", ""},
		{"allowed origin", "GET", "/v1/models", "", "", map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}, 200, "", "https://app.example"},
		{"allowed preflight", "OPTIONS", "/v1/chat/completions", "", "", map[string]string{"Origin": "https://app.example",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Private-Network": "true"}, 204, "", "https://app.example"},
		{"json with charset", "POST", "/tokenize", "application/json; charset=utf-8", `{"model":"think","content":"hi"}`, nil, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, ts.url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			for k, v := range tt.header {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			if tt.code != "" {
				body = decodeJSON(t, resp)
			}
			if code, _ := errorOf(body); resp.StatusCode != tt.status || (tt.code != "" && code != tt.code) {
				t.Errorf("status %d code %v, want %d %s: %v", resp.StatusCode, code, tt.status, tt.code, body)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tt.allowOrigin)
			}
			pna := resp.Header.Get("Access-Control-Allow-Private-Network")
			if want := tt.status == 204; (pna == "true") != want {
				t.Errorf("Access-Control-Allow-Private-Network %q", pna)
			}
		})
	}
	if n := drains.Load(); n != 0 {
		t.Errorf("drain called %d times", n)
	}
	var health wire.Health
	getJSON(t, &qaServer{testServer: ts, http: http.DefaultClient}, "/health", &health)
	if health.Model != "think" {
		t.Errorf("the model was unloaded: /health %+v", health)
	}
	metrics := getText(t, ts.url+"/metrics")
	if want := `prism_http_requests_total{endpoint="POST /v1/chat/completions",status="200"} 1` + "\n"; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s: more chats than the warm-up were answered", want)
	}
}

func decodeJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("status %d, Content-Type %q: not JSON: %v", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	return body
}

func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
