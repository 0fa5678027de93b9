package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/signals"
)

// sessionTimeout closes an HTTP session idle this long (a client that
// vanished without DELETE).
const sessionTimeout = 30 * time.Minute

// pruneAt is the number of remembered callers above which those of ended
// MCP sessions are forgotten.
const pruneAt = 256

// statelessVersion is the first protocol version without the initialize
// handshake; the SDK serves it over HTTP only in stateless mode.
const statelessVersion = "2026-07-28"

// Config is what a Server serves.
type Config struct {
	// Backend generates. Required.
	Backend *backend.Backend
	// Store holds the signals and sessions of the prism_* verbs; nil
	// leaves those tools out.
	Store signals.Store
	// Idle, when set, is told of every tools/call (auto-stop).
	Idle *Idle
	// Logger receives the server's logs; nil for slog.Default.
	Logger *slog.Logger
	// Version is the version the server announces.
	Version string
	// ServerOptions, when set, adjusts the SDK server's options before the
	// server is made (the conformance fixtures add their handlers).
	ServerOptions func(*mcp.ServerOptions)
}

// Server is Prism's MCP server.
type Server struct {
	cfg    Config
	log    *slog.Logger
	mcp    *mcp.Server
	router *signals.Router

	mu      sync.Mutex
	callers map[*mcp.ServerSession]caller // the identity each MCP session started with
}

// caller is an MCP session's signals identity and session.
type caller struct {
	identity, session string
}

// New returns a Server with every tool registered.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, log: log, callers: map[*mcp.ServerSession]caller{}}
	opts := &mcp.ServerOptions{Logger: log, Instructions: instructions}
	if cfg.ServerOptions != nil {
		cfg.ServerOptions(opts)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "prism", Title: "Prism local models", Version: cfg.Version}, opts)
	if cfg.Idle != nil {
		s.mcp.AddReceivingMiddleware(cfg.Idle.middleware)
	}
	s.addGenerationTools()
	if cfg.Store != nil {
		r, err := signals.NewRouter(signals.RouterConfig{Store: cfg.Store})
		if err != nil {
			return nil, err
		}
		s.router = r
		if err := s.addSignalTools(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

const instructions = "Prism runs local language models. generate answers a prompt; list_models, status and benchmark " +
	"describe the models and the device. The prism_* tools and hd_exec exchange signals between agents: call prism_start " +
	"(or hd_exec) with your identity first. No tool reads or writes your files."

// MCP returns the SDK server, to add more features (the conformance
// fixtures do).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Serve serves one client over in and out (stdio) until the client leaves
// or ctx ends. Lines that are not JSON-RPC messages are answered with the
// JSON-RPC error they deserve and never end the session.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	r, w, stop := guardStdio(in, out)
	defer stop()
	return s.mcp.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
}

// HTTPHandler serves streamable HTTP: requests of the 2026-07-28
// protocol (by their Mcp-Protocol-Version header) statelessly, the others
// with sessions (the 2025-11-25 handshake and earlier).
func (s *Server) HTTPHandler() http.Handler {
	get := func(*http.Request) *mcp.Server { return s.mcp }
	// The session handler keeps the last 10 MiB of stream events, so a
	// 2025-11-25 client whose SSE stream broke resumes it (Last-Event-ID).
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: s.log, EventStore: mcp.NewMemoryEventStore(nil),
		SessionTimeout: sessionTimeout})
	// A 2026-07-28 call is its POST: a client that cancels drops the
	// request, and only this option lets that end the tool's context (and
	// so the generation); a notifications/cancelled on another POST finds
	// no session to cancel in.
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: s.log, Stateless: true,
		PropagateRequestCancellation: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= statelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

func (s *Server) callerOf(ss *mcp.ServerSession) (caller, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.callers[ss]
	return c, ok
}

func (s *Server) setCaller(ss *mcp.ServerSession, c caller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.session == "" {
		delete(s.callers, ss)
		return
	}
	s.callers[ss] = c
	if len(s.callers) > pruneAt {
		live := map[*mcp.ServerSession]bool{}
		for l := range s.mcp.Sessions() {
			live[l] = true
		}
		for k := range s.callers {
			if !live[k] {
				delete(s.callers, k)
			}
		}
	}
}

// Close ends every MCP session still open (HTTP sessions, at shutdown).
func (s *Server) Close() {
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}
