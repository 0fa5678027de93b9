// Command acp is Prism's Agent Client Protocol agent over stdio (protocol
// version 1), a thin main over internal/acp. An editor such as Zed starts
// it and speaks JSON-RPC on its stdin and stdout; logs go to stderr.
//
//	go run ./examples/acp
//
// Generation goes to the reference server at PRISM_BASE_URL (default
// http://127.0.0.1:8080/v1, with PRISM_API_KEY) and, when nothing listens
// there, to the same server run in process over the models of
// PRISM_MODELS_DIR, with the load lock and memory budget of every Prism
// process. PRISM_ACP_MODEL picks the model of new sessions. docs/cli.md
// describes the methods; the agent never opens a user file or starts a
// process (spec I9).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/prism-local/prism/internal/acp"
	"github.com/prism-local/prism/internal/backend"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/config"
)

func main() {
	// A closed stdout must fail the write, not kill the process (spec P16).
	signal.Ignore(syscall.SIGPIPE)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Environ(), logger); err != nil {
		logger.Error("acp stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, environ []string, logger *slog.Logger) error {
	cfg, err := config.Load(environ)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	src := sources(cfg, environ)
	sizes, err := acp.ContextSizes(ctx, src)
	if err != nil {
		return err
	}
	b := backend.New(backend.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Sources: src, Environ: environ,
		MaxQueue: cfg.MaxQueue, QueueTimeout: cfg.QueueTimeout, Logger: logger})
	defer func() {
		if err := b.Close(); err != nil {
			logger.Error("unload", "err", err)
		}
	}()
	fmt.Fprintln(os.Stderr, "prism acp: ACP agent on stdio (protocol version 1)")
	return acp.Serve(ctx, acp.Config{Generator: acp.BackendGenerator{Backend: b}, Model: cfg.ACPModel, ContextSize: sizes,
		Version: "dev", Logger: logger}, os.Stdin, os.Stdout)
}

// sources are the model folders of the in-process server, as examples/serve
// finds them.
func sources(cfg config.Config, environ []string) catalog.Sources {
	var src catalog.Sources
	home, _ := os.UserHomeDir()
	prismHome := cfg.Home
	if prismHome == "" && home != "" {
		prismHome = filepath.Join(home, ".prism")
	}
	if cfg.ModelsDir != "" {
		src.ModelsDirs = append(src.ModelsDirs, cfg.ModelsDir)
	}
	if prismHome != "" {
		src.ModelsDirs = append(src.ModelsDirs, filepath.Join(prismHome, "models"))
	}
	get := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := cutKey(environ[i], k); ok {
				return v
			}
		}
		return ""
	}
	src.HubCache = catalog.HubCacheDir(get("HF_HUB_CACHE"), get("HF_HOME"), get("XDG_CACHE_HOME"), home)
	return src
}

func cutKey(kv, k string) (string, bool) {
	if len(kv) > len(k) && kv[:len(k)] == k && kv[len(k)] == '=' {
		return kv[len(k)+1:], true
	}
	return "", false
}
