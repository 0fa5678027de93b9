// Command serve is Prism's OpenAI-compatible reference server: a thin main
// over internal/server, the engine Manager and the model catalog.
//
//	go run ./examples/serve [-model NAME|DIR] [-models-dir DIR] [-addr 127.0.0.1:8080] [-api-key KEY]
//	    [-device auto|cpu|cuda] [-max-queue N] [-queue-timeout D] [-cors-origin ORIGIN ...]
//	    [-ollama URL|off]
//
// Flags override the matching PRISM_* variables (docs/getting-started.md).
// It serves POST /v1/chat/completions, POST /v1/responses, POST /v1/completions, GET /v1/models,
// GET /v1/models/{id}, GET /health, GET /metrics, POST /v1/embeddings, POST /v1/unload and POST
// /v1/drain (docs/api.md), with Ollama's models beside the ONNX ones unless -ollama is off, and a
// chat page at / (docs/cli.md). On SIGINT, SIGTERM or a drain it stops accepting, finishes the
// responses in flight, unloads the model and exits 0.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/server"
	"github.com/prism-local/prism/templates"
)

func main() {
	opts, err := parseFlags(os.Args[1:], os.Environ(), os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once
	}()
	if err := run(ctx, opts, logger); err != nil {
		logger.Error("serve stopped", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down gracefully.
func run(ctx context.Context, o *options, logger *slog.Logger) error {
	ctx, drain := context.WithCancel(ctx) // POST /v1/drain ends the serving like a signal
	defer drain()
	cat, err := catalog.Scan(ctx, catalog.Sources{ModelsDirs: o.modelsDirs, HubCache: o.hubCache})
	if err != nil {
		return err
	}
	def, err := defaultModel(o.model, cat)
	if err != nil {
		return err
	}
	metrics := server.NewMetrics()
	mgr, err := engine.NewManager(loader(o, logger, metrics), engine.WithMaxQueue(o.maxQueue), engine.WithQueueTimeout(o.queueTimeout))
	if err != nil {
		return err
	}
	defer func() {
		if err := mgr.Close(); err != nil {
			logger.Error("unload", "err", err)
		}
		logger.Info("model unloaded; bye")
	}()
	if def.Dir != "" {
		// Load now, so the first request does not wait and a bad model stops the start.
		logger.Info("loading model", "id", def.ID, "dir", def.Dir, "device", cmp.Or(o.device, "PRISM_DEVICE or auto"))
		lease, err := mgr.Use(ctx, server.Key(catalog.Selection{Model: def}), nil)
		if err != nil {
			return err
		}
		st := mgr.Stats()
		logger.Info("model ready", "id", def.ID, "device", st.Device, "fallback_reason", st.FallbackReason)
		lease.Release()
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	loopback := isLoopback(ln.Addr())
	if !loopback && o.apiKey == "" {
		logger.Warn("listening on a non-loopback address without -api-key: anyone who can reach it can use the model", "addr", ln.Addr().String())
	}
	var oc *ollama.Client
	if o.ollamaURL != "" {
		if oc, err = ollama.New(o.ollamaURL); err != nil {
			return err
		}
		logger.Info("serving Ollama's models too", "url", oc.URL())
	}
	h, err := server.New(server.Config{Manager: mgr, Default: def, Catalog: cat, APIKey: o.apiKey, Ollama: oc,
		CORSOrigins: o.corsOrigins, Loopback: loopback, Logger: logger, Drain: drain, Metrics: metrics,
		LoadChat: func(dir string) (*templates.Chat, error) { return prism.LoadChat(dir, prism.WithLogger(logger)) }})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Info("serving", "url", "http://"+ln.Addr().String()+"/v1", "chat_page", "http://"+ln.Addr().String()+"/", "models", len(cat.Models())+btoi(def.Dir != "" && !inCatalog(cat, def)))
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing the requests in flight")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func loader(o *options, logger *slog.Logger, metrics *server.Metrics) engine.Loader {
	return func(ctx context.Context, key string) (*engine.Engine, error) {
		dir, variant := server.SplitKey(key)
		opts := []prism.Option{prism.WithEnv(o.environ), prism.WithLogger(logger)}
		if o.device != "" {
			opts = append(opts, prism.WithDevice(o.device))
		}
		if variant != "" {
			opts = append(opts, prism.WithVariant(variant))
		}
		start := time.Now()
		eng, err := prism.Open(ctx, dir, opts...)
		if err != nil {
			return nil, err
		}
		took := time.Since(start)
		metrics.ObserveLoad(took)
		logger.Info("model loaded", "dir", dir, "device", eng.Device(), "took", took.Round(time.Millisecond))
		return eng, nil
	}
}

// defaultModel is the -model one: a model folder, or a name the catalog resolves.
func defaultModel(name string, cat *catalog.Catalog) (catalog.Model, error) {
	if name == "" {
		return catalog.Model{}, nil
	}
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		if !catalog.IsModel(name) {
			return catalog.Model{}, fmt.Errorf("-model %s: not a model folder (no ONNX decoder graph found)", name)
		}
		return catalog.Model{ID: modelID(name), Dir: name, Source: catalog.SourceDir}, nil
	}
	sel, err := cat.Resolve(name)
	if err != nil {
		return catalog.Model{}, fmt.Errorf("-model: %w", err)
	}
	return sel.Model, nil
}

func inCatalog(cat *catalog.Catalog, m catalog.Model) bool {
	for _, c := range cat.Models() {
		if c.ID == m.ID {
			return true
		}
	}
	return false
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
