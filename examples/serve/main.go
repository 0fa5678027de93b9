// Command serve is Prism's OpenAI-compatible reference server: a thin main
// over internal/app/server, the engine Manager and the model catalog.
//
//	go run ./examples/serve [-model NAME|DIR] [-models-dir DIR] [-addr 127.0.0.1:8080] [-api-key KEY]
//	    [-device auto|cpu|cuda] [-max-queue N] [-queue-timeout D] [-cors-origin ORIGIN ...]
//	    [-ollama URL|off] [-pull]
//
// Flags override the matching PRISM_* variables (docs/getting-started.md).
// It serves POST /v1/chat/completions, POST /v1/responses, POST /v1/completions, GET /v1/models,
// GET /v1/models/{id}, GET /health, GET /metrics, POST /v1/embeddings, POST /v1/unload and POST
// /v1/drain (docs/api.md), with Ollama's models beside the ONNX ones unless -ollama is off, and a
// chat page at / (docs/cli.md). With -pull, a -model OWNER/NAME the machine lacks is pulled from
// the Hugging Face hub first, and POST /api/pull is served. On SIGINT, SIGTERM or a drain it stops
// accepting, finishes the responses in flight, unloads the model and exits 0.
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
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
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
	// Bind first: a busy address fails at once, not after the model loaded.
	ln, err := listen(o.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	cat, err := catalog.Scan(ctx, catalog.Sources{ModelsDirs: o.modelsDirs, HubCache: o.hubCache})
	if err != nil {
		return err
	}
	if cat, err = pullFirst(ctx, o, cat, logger); err != nil {
		return err
	}
	def, err := defaultModel(o.model, cat)
	if err != nil {
		return err
	}
	metrics := server.NewMetrics()
	models := prism.NewModels(logger) // one tokenizer per folder: the engine's and the grammar's
	mgr, err := engine.NewManager(loader(o, logger, metrics, models), engine.WithMaxQueue(o.maxQueue), engine.WithQueueTimeout(o.queueTimeout))
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
		attrs := []any{"id", def.ID, "device", st.Device}
		if st.FallbackReason != "" {
			attrs = append(attrs, "fallback_reason", st.FallbackReason)
		}
		logger.Info("model ready", attrs...)
		lease.Release()
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
	}
	cfg := server.Config{Manager: mgr, Default: def, Catalog: cat, APIKey: o.apiKey, Ollama: oc,
		OllamaOnPurpose: o.ollamaOnPurpose, CORSOrigins: o.corsOrigins, Loopback: loopback, Logger: logger, Drain: drain, Metrics: metrics,
		Models: models}
	if o.pull {
		cfg.Pull = pull(o)
	}
	h, err := server.New(cfg)
	if err != nil {
		return err
	}
	h.CheckOllama(ctx)
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

// listen binds addr, or says which address is taken and how to choose
// another.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w; choose another address with -addr HOST:PORT (ADDR=HOST:PORT with make serve)", addr, err)
	}
	return ln, nil
}

func loader(o *options, logger *slog.Logger, metrics *server.Metrics, models *prism.Models) engine.Loader {
	return func(ctx context.Context, key string) (*engine.Engine, error) {
		dir, variant := server.SplitKey(key)
		opts := []prism.Option{prism.WithEnv(o.environ), prism.WithLogger(logger), prism.WithModels(models)}
		if o.device != "" {
			opts = append(opts, prism.WithDevice(o.device))
		}
		if variant != "" {
			opts = append(opts, prism.WithVariant(variant))
		}
		if !o.speculate {
			opts = append(opts, prism.WithEngineOptions(engine.WithSpeculation(false)))
		}
		opts = append(opts, prism.WithMaxBatch(o.maxBatch))
		start := time.Now()
		eng, err := prism.Open(ctx, dir, opts...)
		if err != nil {
			return nil, err
		}
		// The backend logged the load and prism.Open its time and memory.
		metrics.ObserveLoad(time.Since(start))
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
