package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	settings "github.com/prism-local/prism/internal/config"
)

// options is the validated command line, PRISM_* settings applied under it.
type options struct {
	model        string
	modelsDirs   []string
	hubCache     string
	addr         string
	apiKey       string
	device       string
	maxQueue     int
	queueTimeout time.Duration
	corsOrigins  []string
	// ollamaURL is the Ollama daemon whose models are served too; "" for
	// none (-ollama off).
	ollamaURL string
	// ollamaOnPurpose says -ollama or PRISM_OLLAMA_URL chose a URL other
	// than the default.
	ollamaOnPurpose bool
	environ         []string
	// pull pulls -model from the hub when missing and serves POST /api/pull.
	pull bool
	// speculate leaves speculative decoding on where a model proves it
	// (-speculate=false turns it off for every request).
	speculate bool
	// maxBatch is how many streams a model may decode in one step where
	// it proves batching at load; 1 runs one at a time.
	maxBatch int
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// parseFlags reads the flags over the PRISM_* settings of environ and
// reports every bad value at once.
func parseFlags(args, environ []string, stderr io.Writer) (*options, error) {
	cfg, cfgErr := settings.Load(environ)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{environ: environ}
	modelsDir := fs.String("models-dir", cfg.ModelsDir, "directory of model folders (PRISM_MODELS_DIR)")
	fs.StringVar(&o.model, "model", "", "model to load at start: a folder, or a name from the models directories")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&o.apiKey, "api-key", cfg.APIKey, "require Authorization: Bearer KEY (PRISM_API_KEY)")
	fs.StringVar(&o.device, "device", "", "auto, cpu or cuda (default PRISM_DEVICE, else auto)")
	fs.IntVar(&o.maxQueue, "max-queue", cfg.MaxQueue, "requests that may wait for the model; one more gets 503 (PRISM_MAX_QUEUE)")
	fs.DurationVar(&o.queueTimeout, "queue-timeout", cfg.QueueTimeout, "longest wait for the model before 503 + Retry-After; 0 waits forever (PRISM_QUEUE_TIMEOUT)")
	ollamaURL := fs.String("ollama", cmp.Or(cfg.OllamaURL, "off"), "Ollama's base URL, whose models are served beside the ONNX ones, or off (PRISM_OLLAMA_URL)")
	fs.BoolVar(&o.pull, "pull", false, "pull -model OWNER/NAME[:VARIANT] from the Hugging Face hub when the cache lacks it, and serve POST /api/pull")
	fs.BoolVar(&o.speculate, "speculate", cfg.Speculate, "decode speculatively (prompt lookup) where the model proves it at load; -speculate=false decodes one token per step (PRISM_SPECULATE)")
	fs.IntVar(&o.maxBatch, "max-batch", cfg.MaxBatch, "streams decoded together in one step where the model proves batching at load; 1 runs one at a time (PRISM_MAX_BATCH)")
	var cors listFlag
	fs.Var(&cors, "cors-origin", "origin allowed to call from a browser; repeatable (none by default)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.corsOrigins = cors
	var problems []error
	if cfgErr != nil {
		problems = append(problems, cfgErr)
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	switch o.device {
	case "", "auto", "cpu", "cuda":
	default:
		problems = append(problems, fmt.Errorf("-device %q: want auto, cpu or cuda", o.device))
	}
	if o.maxQueue < 0 {
		problems = append(problems, fmt.Errorf("-max-queue %d: want 0 or more", o.maxQueue))
	}
	if o.maxBatch < 1 {
		problems = append(problems, fmt.Errorf("-max-batch %d: want 1 or more", o.maxBatch))
	}
	if o.queueTimeout < 0 {
		problems = append(problems, fmt.Errorf("-queue-timeout %s: want 0 or more", o.queueTimeout))
	}
	switch u, err := url.Parse(*ollamaURL); {
	case strings.EqualFold(*ollamaURL, "off"):
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		problems = append(problems, fmt.Errorf("-ollama %q: want an http or https URL, or off", *ollamaURL))
	default:
		o.ollamaURL = *ollamaURL
		fs.Visit(func(f *flag.Flag) { o.ollamaOnPurpose = o.ollamaOnPurpose || f.Name == "ollama" })
		o.ollamaOnPurpose = o.ollamaOnPurpose || o.ollamaURL != settings.Defaults().OllamaURL
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		problems = append(problems, fmt.Errorf("-addr %q: want HOST:PORT: %w", o.addr, err))
	}
	for _, c := range o.corsOrigins {
		if !strings.HasPrefix(c, "http://") && !strings.HasPrefix(c, "https://") || strings.HasSuffix(c, "/") {
			problems = append(problems, fmt.Errorf("-cors-origin %q: want an origin such as https://example.com", c))
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	o.modelsDirs, o.hubCache = cfg.ModelsDirs(*modelsDir), cfg.HubCache
	return o, nil
}

// modelID names a -model folder: its base name.
func modelID(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Base(dir)
	}
	return filepath.Base(abs)
}
