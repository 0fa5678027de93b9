package chatpage_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/chatpage"
	"github.com/prism-local/prism/internal/app/server"
)

// bare is a server with no model: enough to serve the page and refuse the API.
func bare(t *testing.T, apiKey string) *httptest.Server {
	t.Helper()
	mgr, err := engine.NewManager(func(context.Context, string) (*engine.Engine, error) {
		return nil, errors.New("no models in this test")
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Config{Manager: mgr, Loopback: true, APIKey: apiKey,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		_ = mgr.Close()
	})
	return srv
}

func get(t *testing.T, method, url string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if h := header.Get("Host"); h != "" {
		req.Host = h
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

var foreignURL = regexp.MustCompile(`(?i)(https?:|wss?:)?//[a-z0-9.-]+\.[a-z]{2,}`)

// svgNS is the SVG namespace name: an identifier, never fetched.
const svgNS = "http://www.w3.org/2000/svg"

func TestPageServed(t *testing.T) {
	srv := bare(t, "")
	resp, page := get(t, http.MethodGet, srv.URL+"/", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if got := resp.Header.Get("Content-Security-Policy"); got != chatpage.CSP || !strings.HasPrefix(got, "default-src 'self';") {
		t.Errorf("CSP %q", got)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v", resp.Header)
	}
	if u := foreignURL.FindString(page); u != "" {
		t.Errorf("the page names another host: %s", u)
	}
	// Every file the page names is served, with its type.
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 3 {
		t.Fatalf("the page names %d files", len(refs))
	}
	for _, m := range refs {
		if !strings.HasPrefix(m[1], chatpage.AssetPrefix) {
			t.Errorf("the page names %q, outside %s", m[1], chatpage.AssetPrefix)
			continue
		}
		r, body := get(t, http.MethodGet, srv.URL+m[1], nil)
		if u := foreignURL.FindString(strings.ReplaceAll(body, svgNS, "")); u != "" {
			t.Errorf("%s names another host: %s", m[1], u)
		}
		if r.StatusCode != 200 || r.Header.Get("Content-Security-Policy") != chatpage.CSP || r.Header.Get("Content-Type") == "application/octet-stream" {
			t.Errorf("%s: %d %s", m[1], r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
	etag := resp.Header.Get("ETag")
	if r, _ := get(t, http.MethodGet, srv.URL+"/", http.Header{"If-None-Match": {etag}}); etag == "" || r.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation with ETag %q: %d", etag, r.StatusCode)
	}
	if r, body := get(t, http.MethodHead, srv.URL+"/", nil); r.StatusCode != 200 || body != "" {
		t.Errorf("HEAD /: %d %q", r.StatusCode, body)
	}
	if r, _ := get(t, http.MethodGet, srv.URL+"/assets/nope.js", nil); r.StatusCode != 404 || r.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("missing asset: %d", r.StatusCode)
	}
	// Other paths keep the server's JSON 404; another method on the page
	// its 405.
	for _, tt := range []struct {
		method, path string
		status       int
		code         string
	}{{http.MethodPost, "/", 405, "method_not_allowed"}, {http.MethodGet, "/index.html", 404, "not_found"}, {http.MethodGet, "/v2", 404, "not_found"}} {
		r, body := get(t, tt.method, srv.URL+tt.path, nil)
		var e struct{ Error struct{ Code string } }
		if err := json.Unmarshal([]byte(body), &e); r.StatusCode != tt.status || err != nil || e.Error.Code != tt.code {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, r.StatusCode, body)
		}
	}
	// The loopback Host check holds for the page too.
	if r, _ := get(t, http.MethodGet, srv.URL+"/", http.Header{"Host": {"evil.example"}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("rebinding Host: %d", r.StatusCode)
	}
}

func TestPageWithAPIKey(t *testing.T) {
	srv := bare(t, "secret")
	for _, path := range []string{"/", "/assets/chat.js", "/assets/chat.css"} {
		if r, _ := get(t, http.MethodGet, srv.URL+path, nil); r.StatusCode != 200 {
			t.Errorf("GET %s without a key: %d", path, r.StatusCode)
		}
	}
	for _, tt := range []struct{ method, path string }{
		{http.MethodGet, "/health"}, {http.MethodGet, "/v1/models"}, {http.MethodGet, "/metrics"},
		{http.MethodPost, "/v1/chat/completions"}, {http.MethodPost, "/"},
	} {
		if r, _ := get(t, tt.method, srv.URL+tt.path, nil); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: %d", tt.method, tt.path, r.StatusCode)
		}
	}
	// A path through the assets does not open an API route.
	if r, body := get(t, http.MethodGet, srv.URL+"/assets/../health", nil); r.StatusCode == 200 {
		t.Errorf("/assets/../health without a key: %d %s", r.StatusCode, body)
	}
}

func TestPublic(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/", true}, {"HEAD", "/", true}, {"GET", "/assets/chat.js", true}, {"GET", "/assets/", true},
		{"POST", "/", false}, {"GET", "/health", false}, {"GET", "/v1/models", false}, {"GET", "/metrics", false},
		{"GET", "/assets/../health", false}, {"GET", "/assets//x", false}, {"OPTIONS", "/", false}, {"GET", "/assetsx", false},
	} {
		r := httptest.NewRequest(tt.method, "http://127.0.0.1"+tt.path, nil)
		r.URL.Path = tt.path
		if got := chatpage.Public(r); got != tt.want {
			t.Errorf("Public(%s %s) = %v", tt.method, tt.path, got)
		}
	}
}

func TestPageBudget(t *testing.T) {
	h, err := chatpage.New()
	if err != nil {
		t.Fatal(err)
	}
	if n := h.Size(); n > 100<<10 {
		t.Errorf("the page is %d bytes, over the 100 KB budget", n)
	}
	t.Logf("page size: %d bytes", h.Size())
}

// FuzzPublic: a path served without the key is the page or a clean path
// under the assets, whatever the request says.
func FuzzPublic(f *testing.F) {
	for _, s := range []string{"/", "/assets/chat.js", "/assets/../health", "/assets//x", "/assets/./a", "//", "/v1/models", "/assets/%2e%2e/health"} {
		f.Add("GET", s)
	}
	f.Add("HEAD", "/")
	f.Add("POST", "/")
	f.Fuzz(func(t *testing.T, method, p string) {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		r.Method, r.URL.Path = method, p
		if !chatpage.Public(r) {
			return
		}
		if method != http.MethodGet && method != http.MethodHead {
			t.Fatalf("%s %q is public", method, p)
		}
		if p != "/" && (!strings.HasPrefix(p, chatpage.AssetPrefix) || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") ||
			strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.HasSuffix(p, "/.")) {
			t.Fatalf("%q is public", p)
		}
	})
}
