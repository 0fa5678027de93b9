package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/internal/app/chatpage"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/catalog"
)

// Config is what a Server serves and how it guards it.
type Config struct {
	// Manager runs the generations; its loader is given the keys Key makes.
	Manager *engine.Manager
	// Default is the model given on the command line (-model DIR); its ID
	// resolves before the catalog. Zero for none.
	Default catalog.Model
	// Catalog resolves the other model names; nil for none.
	Catalog *catalog.Catalog
	// Models is the cache of the folders' tokenizers, templates and
	// grammar compilers that the Manager's loader opens models with
	// (prism.WithModels), so a tokenizer is loaded once; nil for one of
	// the server's own.
	Models *prism.Models
	// APIKey, when set, is required as "Authorization: Bearer KEY".
	APIKey string
	// CORSOrigins are the origins CORS headers are sent to; none by default.
	CORSOrigins []string
	// Loopback says the listener is bound to a loopback address: requests
	// whose Host is not a loopback name are refused (DNS rebinding).
	Loopback bool
	// Logger receives the server's logs; nil for slog.Default.
	Logger *slog.Logger
	// Drain, when set, serves POST /v1/drain: called once the model is
	// unloaded and the answer written, it starts the main's graceful
	// shutdown (it must not block).
	Drain func()
	// Metrics are served at GET /metrics; nil for a set of the server's own.
	Metrics *Metrics
	// Now is the clock of the created fields; nil for time.Now.
	Now func() time.Time
	// Ollama, when set, serves the models Ollama has beside the ONNX ones
	// (docs/api.md, Backends); nil for none.
	Ollama *ollama.Client
	// OllamaOnPurpose says Ollama's URL was configured rather than the
	// default: then a daemon that does not answer is warned about and
	// named in model_not_found messages; at the default URL it is an INFO
	// line, once, until it answers.
	OllamaOnPurpose bool
	// Pull, when set, serves POST /api/pull (pull.go); the catalog it
	// returns replaces Catalog.
	Pull PullFunc
}

// Server is the HTTP handler of the reference server.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *Metrics

	texts      *prism.Models     // each folder's tokenizer, templates, grammar compiler
	engineChat *prism.EngineChat // the chat layer over the Manager

	ollama *ollamaModels // nil without Config.Ollama

	cat atomic.Pointer[catalog.Catalog] // Config.Catalog, then a pull's
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Manager == nil {
		return nil, errors.New("server: a Manager is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.Models == nil {
		cfg.Models = prism.NewModels(cfg.Logger)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), metrics: cfg.Metrics, texts: cfg.Models,
		engineChat: prism.NewEngineChat(cfg.Manager, cfg.Models, prism.WithLogger(cfg.Logger))}
	if cfg.Ollama != nil {
		s.ollama = &ollamaModels{client: cfg.Ollama, log: cfg.Logger, onPurpose: cfg.OllamaOnPurpose}
	}
	s.cat.Store(cfg.Catalog)
	if cfg.Pull != nil {
		s.mux.HandleFunc("POST /api/pull", s.pull)
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("POST /v1/responses", s.responses)
	s.mux.HandleFunc("GET /v1/models", s.listModels)
	s.mux.HandleFunc("GET /v1/models/{id...}", s.getModel)
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("POST /v1/unload", s.unload)
	s.mux.Handle("GET /metrics", s.metricsHandler())
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("POST /detokenize", s.detokenize)
	s.mux.HandleFunc("POST /apply-template", s.applyTemplate)
	s.registerManager()
	if cfg.Drain != nil {
		s.mux.HandleFunc("POST /v1/drain", s.drain)
	}
	page, err := chatpage.New()
	if err != nil {
		return nil, err
	}
	s.mux.Handle(chatpage.PagePattern, page)
	s.mux.Handle(chatpage.AssetPattern, page)
	s.mux.HandleFunc("/", s.notServed)
	return s, nil
}

// ServeHTTP applies the guards (Host, origin and CORS, API key, body cap), routes, and
// counts the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w}
	s.serve(rec, r)
	if r.Pattern == "" {
		// A request the guards refused never reached the mux: count it
		// under the endpoint it was sent to all the same.
		_, r.Pattern = s.mux.Handler(r)
	}
	s.metrics.count(r, rec.status)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Loopback && !loopbackHost(r.Host) {
		s.writeError(w, r, &apiError{status: http.StatusForbidden, code: CodeForbiddenHost,
			message: fmt.Sprintf("host %q is not a loopback name; this server listens on loopback only", clip(r.Host))})
		return
	}
	if !s.checkOrigin(w, r) {
		return
	}
	// The chat page loads without the key so it can ask for it (it holds
	// nothing the key protects); every API route needs it.
	if s.cfg.APIKey != "" && !chatpage.Public(r) && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="prism"`)
		s.writeError(w, r, &apiError{status: http.StatusUnauthorized, code: CodeInvalidAPIKey,
			message: "missing or wrong API key: send Authorization: Bearer KEY"})
		return
	}
	// One byte over the cap lets wire.ReadBody tell a body that is too large.
	r.Body = http.MaxBytesReader(w, r.Body, wire.MaxBodyBytes+1)
	s.mux.ServeHTTP(w, r)
}

// notServed answers what no route takes: 405 with Allow when the path is
// served with other methods, else 404.
func (s *Server) notServed(w http.ResponseWriter, r *http.Request) {
	if allow := s.allowedMethods(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed,
			message: fmt.Sprintf("%s %s is not served; use %s", r.Method, clip(r.URL.Path), strings.Join(allow, " or "))})
		return
	}
	s.writeError(w, r, &apiError{status: http.StatusNotFound, code: CodeNotFound,
		message: fmt.Sprintf("%s %s is not served; see docs/api.md for the endpoints", r.Method, clip(r.URL.Path))})
}

// allowedMethods lists the methods a route serves r's path with.
func (s *Server) allowedMethods(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	return allow
}

func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.APIKey)) == 1
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clip shortens a value from the request before it is repeated.
func clip(s string) string {
	if len(s) > 100 {
		return strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}
