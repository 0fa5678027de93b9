package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/config"
)

// options are the flags over the PRISM_* settings.
type options struct {
	httpAddr     string
	local        bool
	baseURL      string
	apiKey       string
	sources      catalog.Sources
	signalsDB    string
	autoStop     time.Duration
	idleUnload   time.Duration
	maxQueue     int
	queueTimeout time.Duration
	warnings     []string
}

// defaultIdleUnload is how long an in-process model stays loaded unused.
const defaultIdleUnload = 5 * time.Minute

func parseFlags(args, environ []string, stderr io.Writer) (*options, error) {
	cfg, err := config.Load(environ)
	if err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{warnings: cfg.Warnings}
	fs.StringVar(&o.httpAddr, "http", "", "serve streamable HTTP at `HOST:PORT` (path /mcp) instead of stdio")
	fs.BoolVar(&o.local, "local", false, "generate in-process only; never try the reference server")
	modelsDir := fs.String("models-dir", cfg.ModelsDir, "models directory of the in-process engine, searched first (PRISM_MODELS_DIR)")
	fs.DurationVar(&o.idleUnload, "idle-unload", defaultIdleUnload, "unload an in-process model unused this long (0 never)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var problems []error
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if o.idleUnload < 0 {
		problems = append(problems, fmt.Errorf("-idle-unload %s: want 0 or more", o.idleUnload))
	}
	if o.httpAddr != "" {
		if _, _, err := net.SplitHostPort(o.httpAddr); err != nil {
			problems = append(problems, fmt.Errorf("-http %q: want HOST:PORT: %w", o.httpAddr, err))
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	o.sources = catalog.Sources{ModelsDirs: cfg.ModelsDirs(*modelsDir), HubCache: cfg.HubCache}
	o.baseURL, o.apiKey = cfg.BaseURL, cfg.APIKey
	o.autoStop, o.maxQueue, o.queueTimeout = cfg.MCPAutoStop, cfg.MaxQueue, cfg.QueueTimeout
	o.signalsDB = cfg.SignalsDB
	if o.signalsDB == "" {
		if cfg.PrismHome() == "" {
			return nil, errors.New("no home directory for the signals store: set PRISM_HOME or PRISM_SIGNALS_DB")
		}
		o.signalsDB = filepath.Join(cfg.PrismHome(), "signals.db")
	}
	return o, nil
}
