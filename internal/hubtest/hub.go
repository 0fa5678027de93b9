package hubtest

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Hub is a fake hub and its storage host.
type Hub struct {
	// URL is the hub (what HF_ENDPOINT names).
	URL string
	// StorageURL is the host LFS downloads are redirected to.
	StorageURL string
	// Token is the bearer token gated repositories accept.
	Token string

	hub, storage *httptest.Server

	mu     sync.Mutex
	repos  map[string]*Repo
	cuts   map[string][]int64 // path → bytes to send before cutting, one per GET
	bad    map[string]bool    // path → serve corrupted content
	limits []limit            // answers of 429 still to give
	delay  time.Duration      // per chunk of a body
	chunk  int
	log    []Request
}

// Request is one request either server saw.
type Request struct {
	Method, Host, Path string
	// File is the repository file asked for ("" for the listing).
	File  string
	Range string
	// AcceptEncoding is the request's Accept-Encoding header.
	AcceptEncoding string
	Auth           bool // an Authorization header came with it
	Status         int
}

type limit struct{ retryAfter string }

// Repo is one repository the hub serves.
type Repo struct {
	ID     string
	Commit string
	// Refs map branch and tag names to Commit ("main" always).
	Refs map[string]string
	// Gated repositories answer 403 GatedRepo without Hub.Token.
	Gated bool
	files map[string][]byte
}

// New starts a hub and its storage host, closed when t ends.
func New(t testing.TB) *Hub {
	h := &Hub{Token: "hf_test_token", repos: map[string]*Repo{}, cuts: map[string][]int64{}, bad: map[string]bool{}, chunk: 32 << 10}
	h.storage = httptest.NewServer(http.HandlerFunc(h.serveStorage))
	api, files := http.NewServeMux(), http.NewServeMux()
	api.HandleFunc("GET /api/models/{owner}/{name}/revision/{rev}", h.serveInfo)
	files.HandleFunc("GET /{owner}/{name}/resolve/{rev}/{path...}", h.serveResolve)
	files.HandleFunc("HEAD /{owner}/{name}/resolve/{rev}/{path...}", h.serveResolve)
	h.hub = httptest.NewServer(h.logged("hub", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			api.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})))
	h.URL, h.StorageURL = h.hub.URL, h.storage.URL
	t.Cleanup(func() {
		h.hub.Close()
		h.storage.Close()
	})
	return h
}

// AddRepo serves files (path → contents) as repository id at one commit.
func (h *Hub) AddRepo(id string, files map[string][]byte) *Repo {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	c := sha1.New()
	for _, n := range names {
		fmt.Fprintf(c, "%s %s\n", n, gitBlobID(files[n]))
	}
	r := &Repo{ID: id, Commit: hex.EncodeToString(c.Sum(nil)), files: files}
	r.Refs = map[string]string{"main": r.Commit}
	h.mu.Lock()
	h.repos[id] = r
	h.mu.Unlock()
	return r
}

// AddModel serves the model folder dir (as internal/onnxgen writes it) as
// repository id; hidden files are left out.
func (h *Hub) AddModel(t testing.TB, id, dir string) *Repo {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return h.AddRepo(id, files)
}

// CutAfter makes the next GETs of path (one per value) send that many
// bytes of the body and then drop the connection.
func (h *Hub) CutAfter(path string, bytes ...int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cuts[path] = append(h.cuts[path], bytes...)
}

// Corrupt makes path's body differ from its digest in one byte (same size,
// same headers).
func (h *Hub) Corrupt(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bad[path] = true
}

// TooManyRequests makes the next n requests to the hub answer 429 with
// the Retry-After value given ("" sends none).
func (h *Hub) TooManyRequests(n int, retryAfter string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for range n {
		h.limits = append(h.limits, limit{retryAfter})
	}
}

// Slow sends bodies in chunks of size bytes, waiting d before each.
func (h *Hub) Slow(size int, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunk, h.delay = size, d
}

// Requests returns what both servers saw, in order.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

// IsLFS reports whether the hub keeps path in LFS: graphs, their data and
// anything of 10 KiB or more, as repositories on the hub do.
func IsLFS(path string, size int) bool {
	return strings.HasSuffix(path, ".onnx") || strings.Contains(path, ".onnx_data") || strings.Contains(path, ".onnx.data") || size >= 10<<10
}

func gitBlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// statusRecorder keeps the status for the log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logged records each request and answers queued 429s.
func (h *Hub) logged(host string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.mu.Lock()
		var lim *limit
		if host == "hub" && len(h.limits) > 0 {
			lim = &h.limits[0]
			h.limits = h.limits[1:]
		}
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			file := r.PathValue("path")
			if host == "storage" {
				file = r.URL.Query().Get("path")
			}
			h.log = append(h.log, Request{Method: r.Method, Host: host, Path: r.URL.Path, File: file, Range: r.Header.Get("Range"), AcceptEncoding: r.Header.Get("Accept-Encoding"), Auth: r.Header.Get("Authorization") != "", Status: rec.status})
			h.mu.Unlock()
		}()
		if lim != nil {
			if lim.retryAfter != "" {
				w.Header().Set("Retry-After", lim.retryAfter)
			}
			rec.WriteHeader(http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// hubError answers as the hub does, with X-Error-Code.
func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, `{"error":"`+msg+`"}`, status)
}

// repo finds the repository and commit of a request, answering the
// hub's errors itself.
func (h *Hub) repo(w http.ResponseWriter, r *http.Request) (*Repo, string, bool) {
	id := r.PathValue("owner") + "/" + r.PathValue("name")
	h.mu.Lock()
	repo := h.repos[id]
	h.mu.Unlock()
	if repo == nil {
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.Path)
		return nil, "", false
	}
	if repo.Gated && r.Header.Get("Authorization") != "Bearer "+h.Token {
		hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it.")
		return nil, "", false
	}
	rev := r.PathValue("rev")
	commit, ok := repo.Refs[rev]
	if !ok && rev == repo.Commit {
		commit, ok = rev, true
	}
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return nil, "", false
	}
	return repo, commit, true
}

func (h *Hub) serveInfo(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := h.repo(w, r)
	if !ok {
		return
	}
	type lfs struct {
		SHA256      string `json:"sha256"`
		Size        int    `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type sibling struct {
		RFilename string `json:"rfilename"`
		Size      *int   `json:"size,omitempty"`
		BlobID    string `json:"blobId,omitempty"`
		LFS       *lfs   `json:"lfs,omitempty"`
	}
	blobs := r.URL.Query().Get("blobs") == "true"
	var sibs []sibling
	for _, name := range slices.Sorted(mapsKeys(repo.files)) {
		b := repo.files[name]
		s := sibling{RFilename: name}
		if blobs {
			n := len(b)
			s.Size, s.BlobID = &n, gitBlobID(b)
			if IsLFS(name, n) {
				s.LFS = &lfs{SHA256: sha256Hex(b), Size: n, PointerSize: 134}
			}
		}
		sibs = append(sibs, s)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"_id": "fake", "id": repo.ID, "modelId": repo.ID, "sha": commit, "private": false,
		"gated": map[bool]any{true: "auto", false: false}[repo.Gated], "library_name": "transformers.js",
		"tags": []string{"transformers.js", "onnx"}, "siblings": sibs,
	})
}

func mapsKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (h *Hub) serveResolve(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := h.repo(w, r)
	if !ok {
		return
	}
	path := r.PathValue("path")
	b, ok := repo.files[path]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", path+" does not exist on \""+commit+"\"")
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if IsLFS(path, len(b)) {
		w.Header().Set("X-Linked-Etag", `"`+sha256Hex(b)+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(b)))
		w.Header().Set("ETag", `"`+gitBlobID([]byte("pointer "+path))+`"`)
		w.Header().Set("Location", h.StorageURL+"/blobs/"+sha256Hex(b)+"?path="+path+"&X-Amz-Signature=fake")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitBlobID(b)+`"`)
	h.serveBody(w, r, path, b)
}

func (h *Hub) serveStorage(w http.ResponseWriter, r *http.Request) {
	h.logged("storage", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("path")
		h.mu.Lock()
		var body []byte
		for _, repo := range h.repos {
			if b, ok := repo.files[path]; ok && "/blobs/"+sha256Hex(b) == r.URL.Path {
				body = b
			}
		}
		h.mu.Unlock()
		if body == nil {
			http.Error(w, "no such blob", http.StatusNotFound)
			return
		}
		h.serveBody(w, r, path, body)
	})).ServeHTTP(w, r)
}

// serveBody answers a GET or HEAD of b with Range support and the faults
// set for path.
func (h *Hub) serveBody(w http.ResponseWriter, r *http.Request, path string, b []byte) {
	h.mu.Lock()
	cut := int64(-1)
	if q := h.cuts[path]; len(q) > 0 && r.Method == http.MethodGet {
		cut, h.cuts[path] = q[0], q[1:]
	}
	if h.bad[path] {
		b = slices.Clone(b)
		b[len(b)/2] ^= 0xff
	}
	delay, chunk := h.delay, h.chunk
	h.mu.Unlock()
	start := int64(0)
	if rg := r.Header.Get("Range"); rg != "" {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "bad range", http.StatusBadRequest)
			return
		}
		if n >= int64(len(b)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(b)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(b)-1, len(b)))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)-int(start)))
	w.Header().Set("Accept-Ranges", "bytes")
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if r.Method == http.MethodHead {
		return
	}
	rest := b[start:]
	sent := int64(0)
	for len(rest) > 0 {
		n := min(chunk, len(rest))
		if cut >= 0 && sent+int64(n) > cut {
			n = int(cut - sent)
		}
		if delay > 0 && !sleep(r.Context(), delay) {
			return
		}
		w.Write(rest[:n])
		w.(http.Flusher).Flush()
		sent += int64(n)
		rest = rest[n:]
		if cut >= 0 && sent >= cut {
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
