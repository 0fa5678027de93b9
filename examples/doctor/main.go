// Command doctor is Prism's read-only setup diagnosis (the spec's
// `prism doctor`, P5 and P17): the ONNX Runtime library and its version,
// which execution providers can run and why CUDA cannot, NVML and per-GPU
// VRAM with the low-VRAM warning, RAM and swap, the load lock, the model
// folders found, whether Ollama answers on loopback, and under WSL whether
// the Windows .wslconfig limits memory. It changes nothing (except that
// listing resident models, as lock.Residents does, deletes the marks of
// processes that have died) and exits 0.
//
//	go run ./examples/doctor [-models DIR] [-ort PATH] [-ollama URL] [-timeout 2s] [-wslconfig PATH]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	settings "github.com/prism-local/prism/internal/config"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Environ(), os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // the flag package has printed the usage
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	diagnose(context.Background(), cfg, os.Stdout, logger)
}

// config is the validated command line.
type config struct {
	modelsDir string
	ortLib    string
	ollamaURL string
	timeout   time.Duration
	wslConfig string
	// settings are the PRISM_* settings, read by the same config every
	// Prism program uses; settingsErr lists the malformed ones, which the
	// diagnosis reports and replaces by their defaults (a program would
	// refuse to start).
	settings    settings.Config
	settingsErr error
	// getenv reads the other variables the diagnosis looks at
	// (LD_LIBRARY_PATH, USERPROFILE, USER).
	getenv func(string) string
	// procVersion and usersDir are where WSL is detected and Windows user
	// profiles are looked for; tests point them at fixtures.
	procVersion string
	usersDir    string
}

func parseFlags(args []string, environ []string, stderr io.Writer) (config, error) {
	cfg := config{getenv: lookupIn(environ), procVersion: "/proc/version", usersDir: "/mnt/c/Users"}
	cfg.settings, cfg.settingsErr = settings.Load(environ)
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.modelsDir, "models", defaultModelsDir(cfg.settings), "directory searched for model folders")
	fs.StringVar(&cfg.ortLib, "ort", "", "path of libonnxruntime.so (default: PRISM_ORT_LIB, then the cache)")
	fs.StringVar(&cfg.ollamaURL, "ollama", "http://127.0.0.1:11434", "Ollama base URL; loopback hosts only")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Second, "how long to wait for Ollama to answer")
	fs.StringVar(&cfg.wslConfig, "wslconfig", "", "Windows .wslconfig to inspect under WSL (default: found through USERPROFILE or /mnt/c/Users)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "doctor takes no arguments, got %q\n", fs.Args())
		fs.Usage()
		return config{}, fmt.Errorf("unexpected arguments")
	}
	if cfg.timeout <= 0 {
		cfg.timeout = 2 * time.Second
	}
	return cfg, nil
}

// lookupIn reads variables from environ (KEY=VALUE entries; a later one
// wins, as in os/exec).
func lookupIn(environ []string) func(string) string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return func(k string) string { return env[k] }
}
