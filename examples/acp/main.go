// Command acp is Prism's Agent Client Protocol agent over stdio (protocol
// version 1), a thin main over internal/app/acp. An editor such as Zed starts
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
	"syscall"

	"github.com/prism-local/prism/internal/app/acp"
	"github.com/prism-local/prism/internal/app/backend"
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
	src := sources(cfg)
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
func sources(cfg config.Config) catalog.Sources {
	return catalog.Sources{ModelsDirs: cfg.ModelsDirs(""), HubCache: cfg.HubCache}
}
