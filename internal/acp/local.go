package acp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/internal/server"
	"github.com/prism-local/prism/resources"
	"github.com/prism-local/prism/templates"
)

// Local is the reference server's handler run in this process over its own
// engine Manager, whose loader is prism.Open with the PRISM_* settings: the
// same cross-process load lock and memory budget as every Prism process.
type Local struct {
	HTTPGenerator
	cat *catalog.Catalog
	mgr *engine.Manager
}

// NewLocal scans src for models and builds the in-process server; no model
// is loaded until a prompt needs it.
func NewLocal(ctx context.Context, src catalog.Sources, environ []string, log *slog.Logger) (*Local, error) {
	cat, err := catalog.Scan(ctx, src)
	if err != nil {
		return nil, err
	}
	mgr, err := engine.NewManager(func(ctx context.Context, key string) (*engine.Engine, error) {
		dir, variant := server.SplitKey(key)
		opts := []prism.Option{prism.WithEnv(environ), prism.WithLogger(log)}
		if variant != "" {
			opts = append(opts, prism.WithVariant(variant))
		}
		return prism.Open(ctx, dir, opts...)
	})
	if err != nil {
		return nil, err
	}
	h, err := server.New(server.Config{Manager: mgr, Catalog: cat, Logger: log,
		LoadChat: func(dir string) (*templates.Chat, error) { return prism.LoadChat(dir, prism.WithLogger(log)) }})
	if err != nil {
		_ = mgr.Close()
		return nil, err
	}
	return &Local{HTTPGenerator: HTTPGenerator{BaseURL: "http://in-process/v1", Client: InProcessClient(h)}, cat: cat, mgr: mgr}, nil
}

// Close unloads the model.
func (l *Local) Close() error { return l.mgr.Close() }

// ContextSize reads a local model's context window from its folder; 0 when
// the model is not on this machine or the folder does not say.
func (l *Local) ContextSize(model string) int {
	sel, err := l.cat.Resolve(model)
	if err != nil {
		return 0
	}
	f, err := modelfolder.Read(sel.Dir)
	if err != nil {
		return 0
	}
	genai, _ := f.ReadOptional("genai_config.json")
	hf, _ := f.ReadOptional("config.json")
	shape, err := resources.ParseModelShape(genai, hf)
	if err != nil {
		return 0
	}
	return shape.ContextLength
}

// Fallback generates through Remote (the reference server) and, when it
// cannot be reached, through Local, with a warning (spec P16).
type Fallback struct {
	Remote Generator
	Local  Generator
	Log    *slog.Logger

	mu     sync.Mutex
	warned time.Time
}

// unreachable reports whether err means nothing listens at the server's
// address: a failed dial, not a server that answered with an error.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (f *Fallback) warn(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.warned) > time.Minute {
		f.warned = time.Now()
		f.Log.Warn("the reference server is unreachable; generating in process", "err", err)
	}
}

// Generate tries the server first.
func (f *Fallback) Generate(ctx context.Context, model string, messages []Message, tools []json.RawMessage, emit func(Delta) error) (Answer, error) {
	ans, err := f.Remote.Generate(ctx, model, messages, tools, emit)
	if err != nil && unreachable(err) && ctx.Err() == nil {
		f.warn(err)
		return f.Local.Generate(ctx, model, messages, tools, emit)
	}
	return ans, err
}

// Models lists the server's models, else the local ones.
func (f *Fallback) Models(ctx context.Context) ([]string, error) {
	ids, err := f.Remote.Models(ctx)
	if err != nil && unreachable(err) && ctx.Err() == nil {
		f.warn(err)
		return f.Local.Models(ctx)
	}
	return ids, err
}
