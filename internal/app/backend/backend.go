package backend

import (
	"context"
	"errors"
	"fmt"
	"github.com/prism-local/prism/internal/app/wire"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/catalog"
)

// DefaultBaseURL is the reference server's address when PRISM_BASE_URL is
// unset: examples/serve's default -addr.
const DefaultBaseURL = "http://127.0.0.1:8080/v1"

// Where an answer came from (Result.Backend, Status.Backend).
const (
	KindServer    = "server"
	KindInProcess = "in-process"
)

// Config configures a Backend.
type Config struct {
	// BaseURL is the reference server's API root; "" is DefaultBaseURL.
	BaseURL string
	// APIKey is sent to the server as a bearer token.
	APIKey string
	// Local makes every call in-process, never trying the server.
	Local bool
	// Sources are where the in-process fallback finds models.
	Sources catalog.Sources
	// Environ is passed to prism.Open (prism.WithEnv): the PRISM_* device,
	// lock and budget settings of the in-process fallback.
	Environ []string
	// MaxQueue, QueueTimeout and IdleUnload configure the fallback's
	// engine.Manager; zero values take the engine's defaults (no idle
	// unload).
	MaxQueue     int
	QueueTimeout time.Duration
	IdleUnload   time.Duration
	// Logger receives the fallback warnings and the in-process server's
	// logs; nil for slog.Default.
	Logger *slog.Logger
	// HTTPClient reaches the server; nil for a client without a timeout
	// (a generation may be long; cancel with the context).
	HTTPClient *http.Client
}

// Backend generates through the reference server, falling back to an
// in-process copy of it when the server cannot be reached. It is safe for
// concurrent use.
type Backend struct {
	cfg    Config
	log    *slog.Logger
	remote *Client
	// fellBack is set while the server is unreachable: the warning is
	// logged once per outage, and every result carries it.
	fellBack atomic.Bool

	mu     sync.Mutex
	local  *local
	closed bool
}

// New returns a Backend; nothing is loaded or dialled until the first call.
func New(cfg Config) *Backend {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Backend{cfg: cfg, log: log, remote: NewClient(cfg.BaseURL, cfg.APIKey, cfg.HTTPClient)}
}

// Unreachable reports whether err means nothing answered at the server's
// address (refused, no route, unknown host), so that falling back cannot
// repeat work the server did.
func Unreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// do runs fn against the server, or in-process when the server is
// unreachable; it returns where fn ran and the warnings to pass on.
func (b *Backend) do(ctx context.Context, fn func(c side) error) (kind string, warnings []string, err error) {
	if !b.cfg.Local {
		err := fn(b.remote)
		if err == nil || !Unreachable(err) {
			if b.fellBack.Swap(false) {
				b.log.Info("reference server reachable again", "base_url", b.cfg.BaseURL)
			}
			return KindServer, nil, err
		}
		warnings = append(warnings, fmt.Sprintf("the reference server at %s is unreachable (%v); answered by the in-process engine instead", b.cfg.BaseURL, rootCause(err)))
		if !b.fellBack.Swap(true) {
			b.log.Warn("reference server unreachable; using the in-process engine", "base_url", b.cfg.BaseURL, "err", err)
		}
	}
	l, err := b.inProcess()
	if err != nil {
		return KindInProcess, warnings, err
	}
	return KindInProcess, warnings, fn(l)
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// inProcess returns the in-process chat layer, building it on first use.
func (b *Backend) inProcess() (*local, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, newError(errcode.EngineClosed, "closed")
	}
	if b.local != nil {
		return b.local, nil
	}
	ctx := context.Background()
	cat, err := catalog.Scan(ctx, b.cfg.Sources)
	if err != nil {
		return nil, err
	}
	opts := []engine.ManagerOption{engine.WithManagerLogger(b.log)}
	if b.cfg.MaxQueue > 0 {
		opts = append(opts, engine.WithMaxQueue(b.cfg.MaxQueue))
	}
	if b.cfg.QueueTimeout > 0 {
		opts = append(opts, engine.WithQueueTimeout(b.cfg.QueueTimeout))
	}
	if b.cfg.IdleUnload > 0 {
		opts = append(opts, engine.WithIdleUnload(b.cfg.IdleUnload))
	}
	// The Manager's loader is prism.Open (through the Models, so the
	// engine and the grammar share the tokenizer), which takes the
	// cross-process load lock and checks the resource budget, as the
	// reference server's loader does.
	models := prism.NewModels(b.log)
	mgr, err := engine.NewManager(models.Loader(prism.WithEnv(b.cfg.Environ), prism.WithLogger(b.log)), opts...)
	if err != nil {
		return nil, err
	}
	b.local = &local{mgr: mgr, cat: cat, chat: prism.NewEngineChat(mgr, models, prism.WithLogger(b.log))}
	return b.local, nil
}

// Chat streams a chat completion (see Client.Chat); an empty req.Model is
// the first model the answering side lists.
func (b *Backend) Chat(ctx context.Context, req ChatRequest, onDelta func(Delta) error) (*Result, error) {
	var res *Result
	kind, warnings, err := b.do(ctx, func(c side) error {
		r := req
		if r.Model == "" {
			id, err := DefaultModel(ctx, c)
			if err != nil {
				return err
			}
			r.Model = id
		}
		var err error
		res, err = c.Chat(ctx, r, onDelta)
		return err
	})
	if err != nil {
		return nil, withWarnings(err, warnings)
	}
	res.Backend, res.Warnings = kind, warnings
	return res, nil
}

// DefaultModel is the first model c lists: the id a request without a
// model is sent with.
func DefaultModel(ctx context.Context, c side) (string, error) {
	models, err := c.Models(ctx)
	if err != nil {
		return "", err
	}
	if len(models) == 0 {
		return "", newError(errcode.ModelNotFound, "no model is available: put a model folder in the models directory (PRISM_MODELS_DIR) or start the reference server with -model")
	}
	return models[0].ID, nil
}

// Models lists the models of the answering side.
func (b *Backend) Models(ctx context.Context) ([]Model, string, []string, error) {
	var models []Model
	kind, warnings, err := b.do(ctx, func(c side) error {
		var err error
		models, err = c.Models(ctx)
		return err
	})
	return models, kind, warnings, withWarnings(err, warnings)
}

// Status is the answering side's health and where it is.
type Status struct {
	wire.Health
	// Backend is KindServer or KindInProcess; BaseURL the server asked.
	Backend string
	BaseURL string
	// Warnings lists fallbacks.
	Warnings []string
}

// Status reads the health of the answering side.
func (b *Backend) Status(ctx context.Context) (Status, error) {
	var h wire.Health
	kind, warnings, err := b.do(ctx, func(c side) error {
		var err error
		h, err = c.Health(ctx)
		return err
	})
	return Status{Health: h, Backend: kind, BaseURL: b.cfg.BaseURL, Warnings: warnings}, withWarnings(err, warnings)
}

// Resident reports whether the in-process engine holds a model.
func (b *Backend) Resident() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.local != nil && b.local.mgr.Stats().ActiveModel != ""
}

// Close unloads the in-process model, if any, after the calls in flight.
func (b *Backend) Close() error {
	b.mu.Lock()
	l := b.local
	b.closed, b.local = true, nil
	b.mu.Unlock()
	if l == nil {
		return nil
	}
	err := l.mgr.Close()
	l.wg.Wait()
	return err
}

// warnedError carries the fallback warnings of a failed call.
type warnedError struct {
	err      error
	warnings []string
}

func (e *warnedError) Error() string { return e.err.Error() }
func (e *warnedError) Unwrap() error { return e.err }

func withWarnings(err error, warnings []string) error {
	if err == nil || len(warnings) == 0 {
		return err
	}
	return &warnedError{err: err, warnings: warnings}
}

// Warnings returns the fallback warnings a failed call's error carries.
func Warnings(err error) []string {
	var w *warnedError
	if errors.As(err, &w) {
		return w.warnings
	}
	return nil
}
