package chatpage

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// The mux patterns the page is served under: the page itself at / (only /,
// so every other path keeps the server's JSON 404) and its assets.
const (
	PagePattern  = "GET /{$}"
	AssetPattern = "GET " + AssetPrefix
)

// AssetPrefix is the path the page's scripts, styles and icon are served
// under.
const AssetPrefix = "/assets/"

// CSP is the Content-Security-Policy of every file: the page's own origin
// for everything, no plugins, no framing, no form posts, no base rewrite.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file ready to serve.
type file struct {
	body []byte
	typ  string
	etag string
}

// Handler serves the page and its assets.
type Handler struct {
	files map[string]file // by URL path
}

// New reads the embedded files once.
func New() (*Handler, error) {
	h := &Handler{files: map[string]file{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		f := file{body: body, typ: mime.TypeByExtension(path.Ext(p)), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		if f.typ == "" {
			f.typ = "application/octet-stream"
		}
		name := strings.TrimPrefix(p, "static/")
		if name == "index.html" {
			h.files["/"] = f
		} else {
			h.files[AssetPrefix+name] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chatpage: read embedded files: %w", err)
	}
	if _, ok := h.files["/"]; !ok {
		return nil, fmt.Errorf("chatpage: no index.html embedded")
	}
	return h, nil
}

// Size is the number of bytes of all the page's files together.
func (h *Handler) Size() int {
	n := 0
	for _, f := range h.files {
		n += len(f.body)
	}
	return n
}

// Public reports whether r asks for the page or one of its assets: the
// requests a server with an API key serves without one, so the page can load
// and ask for the key. No API route is public.
func Public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	if clean := path.Clean(p); clean != p && clean+"/" != p {
		return false // "/assets/../v1/models" is not the page's
	}
	return p == "/" || strings.HasPrefix(p, AssetPrefix)
}

// ServeHTTP serves the file r names, with the security headers on every
// answer, a 404 included.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	f, ok := h.files[r.URL.Path]
	if !ok {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	hd.Set("Content-Type", f.typ)
	// Revalidated on every load, so a new binary's page shows at once.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
