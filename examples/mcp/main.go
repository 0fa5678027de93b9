// Command mcp is Prism's MCP server: a thin main over internal/app/mcpserver.
// It speaks MCP over stdio (the default, for editors) or streamable HTTP
// (-http ADDR, at /mcp), and serves the tools generate, list_models, status
// and benchmark and the signals verbs (docs/cli.md, "examples/mcp").
//
//	go run ./examples/mcp [-http 127.0.0.1:8765] [-local] [-models-dir DIR] [-idle-unload 5m]
//
// Generation goes to the reference server at PRISM_BASE_URL (with
// PRISM_API_KEY) and falls back to an in-process engine when nothing
// answers there. PRISM_MCP_AUTO_STOP_SEC stops the server after that many
// seconds without a tool call (P10); PRISM_SIGNALS_DB names the signals
// store.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/internal/app/mcpserver"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}

func run(args, environ []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) int {
	o, err := parseFlags(args, environ, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcp:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, w := range o.warnings {
		logger.Warn(w)
	}
	// A client that closes our stdout must get an EPIPE error, not the
	// signal that would end the process.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	store, err := mcpserver.OpenStore(ctx, o.signalsDB)
	if err != nil {
		logger.Error("mcp stopped", "err", err)
		return 1
	}
	defer store.Close()
	b := backend.New(backend.Config{BaseURL: o.baseURL, APIKey: o.apiKey, Local: o.local, Sources: o.sources,
		Environ: environ, MaxQueue: o.maxQueue, QueueTimeout: o.queueTimeout, IdleUnload: o.idleUnload, Logger: logger})
	defer func() {
		if err := b.Close(); err != nil {
			logger.Error("unload", "err", err)
		}
	}()
	var idle *mcpserver.Idle
	if o.autoStop > 0 {
		idle = mcpserver.NewIdle(o.autoStop)
		defer idle.Stop()
		go func() {
			select {
			case <-idle.Done():
				cancel(errAutoStop)
			case <-ctx.Done():
			}
		}()
	}
	srv, err := mcpserver.New(mcpserver.Config{Backend: b, Store: store, Idle: idle, Logger: logger, Version: version})
	if err != nil {
		logger.Error("mcp stopped", "err", err)
		return 1
	}
	if o.httpAddr != "" {
		err = serveHTTP(ctx, o.httpAddr, srv, logger)
	} else {
		err = serveStdio(ctx, srv, stdin, stdout)
	}
	if errors.Is(context.Cause(ctx), errAutoStop) {
		fmt.Fprintf(stderr, "prism mcp: no tool call for %s (PRISM_MCP_AUTO_STOP_SEC=%g); exiting\n", o.autoStop, o.autoStop.Seconds())
		return 0
	}
	if err != nil && !clientGone(err) && ctx.Err() == nil {
		logger.Error("mcp stopped", "err", err)
		return 1
	}
	return 0
}

// version is the version the server announces.
const version = "0.1.0"

var errAutoStop = errors.New("auto-stop: idle")

// serveStdio serves one client until it closes stdin or ctx ends; a read
// blocked on stdin does not hold the exit up past a short grace.
func serveStdio(ctx context.Context, srv *mcpserver.Server, stdin io.ReadCloser, stdout io.WriteCloser) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, stdin, stdout) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return err
	case <-time.After(250 * time.Millisecond):
		return nil
	}
}

// clientGone reports errors that only mean the client left: its end of
// stdin or stdout closed.
func clientGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

func serveHTTP(ctx context.Context, addr string, srv *mcpserver.Server, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		logger.Warn("serving MCP on a non-loopback address: anyone who can reach it can use the models and the signals", "addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	logger.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv.Close() // ends the sessions' open streams, so Shutdown does not wait on them
	_ = hs.Shutdown(shutdown)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
