// Command bench is Prism's `prism benchmark`: it loads a model folder with
// prism.Open, runs a fixed prompt a few times and prints the device actually
// used (with the fallback reason, spec I1), the load time, the time to first
// token, the decode rate in tokens per second and the process's peak memory.
//
//	go run ./examples/bench -model DIR [-device auto|cpu|cuda] [-threads N]
//	    [-prompt-tokens 128] [-max-tokens 128] [-runs 3] [-prefill-chunk N] [-ort PATH] [-json]
//
// docs/cli.md documents every flag.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rep, err := run(ctx, cfg, logger)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if cfg.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
		return
	}
	rep.print(os.Stdout)
}

// config is the validated command line.
type config struct {
	model        string
	device       string
	threads      int
	promptTokens int
	maxTokens    int
	runs         int
	prefillChunk int
	ortLib       string
	json         bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.model, "model", "", "model folder (genai or optimum layout); required")
	fs.StringVar(&cfg.device, "device", "auto", "auto, cpu or cuda")
	fs.IntVar(&cfg.threads, "threads", 0, "intra-op threads (0: PRISM_THREADS, else the runtime's choice)")
	fs.IntVar(&cfg.promptTokens, "prompt-tokens", 128, "prompt length in tokens")
	fs.IntVar(&cfg.maxTokens, "max-tokens", 128, "tokens to generate per run (EOS ends a run earlier)")
	fs.IntVar(&cfg.runs, "runs", 3, "measured runs (after one warm-up run); medians are reported")
	fs.IntVar(&cfg.prefillChunk, "prefill-chunk", -1, "prefill chunk in tokens (-1: PRISM_PREFILL_CHUNK or 1024; 0: whole prompt)")
	fs.StringVar(&cfg.ortLib, "ort", "", "path of libonnxruntime.so (default: PRISM_ORT_LIB, then the cache)")
	fs.BoolVar(&cfg.json, "json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	bad := func(format string, a ...any) (config, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintln(stderr, "bench:", err)
		fs.Usage()
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case cfg.model == "":
		return bad("-model is required")
	case cfg.device != "auto" && cfg.device != "cpu" && cfg.device != "cuda":
		return bad("-device %q: want auto, cpu or cuda", cfg.device)
	case cfg.threads < 0, cfg.promptTokens < 1, cfg.maxTokens < 1, cfg.runs < 1, cfg.prefillChunk < -1:
		return bad("-threads must be >= 0; -prompt-tokens, -max-tokens and -runs >= 1; -prefill-chunk >= -1")
	}
	return cfg, nil
}

// report is what one benchmark measured.
type report struct {
	Model          string  `json:"model"`
	Device         string  `json:"device"`
	FallbackReason string  `json:"fallback_reason,omitempty"`
	LoadSeconds    float64 `json:"load_seconds"`
	PromptTokens   int     `json:"prompt_tokens"`
	NewTokens      int     `json:"new_tokens"`
	Runs           int     `json:"runs"`
	TTFTms         float64 `json:"ttft_ms"`
	TokensPerSec   float64 `json:"tokens_per_second"`
	PeakRSSMiB     float64 `json:"peak_rss_mib"`
}

func run(ctx context.Context, cfg config, logger *slog.Logger) (report, error) {
	// The PRISM_* settings are the base; the flags given win over them.
	opts := []prism.Option{prism.WithEnv(os.Environ()), prism.WithDevice(cfg.device), prism.WithLogger(logger)}
	if cfg.threads > 0 {
		opts = append(opts, prism.WithThreads(cfg.threads))
	}
	if cfg.ortLib != "" {
		opts = append(opts, prism.WithORTLibrary(cfg.ortLib))
	}
	if cfg.prefillChunk >= 0 {
		opts = append(opts, prism.WithPrefillChunk(cfg.prefillChunk))
	}
	start := time.Now()
	e, err := prism.Open(ctx, cfg.model, opts...)
	if err != nil {
		return report{}, err
	}
	defer e.Close()
	rep := report{Model: cfg.model, Device: e.Info().Device, FallbackReason: e.Info().FallbackReason,
		LoadSeconds: time.Since(start).Seconds(), Runs: cfg.runs}

	prompt := promptIDs(e, cfg.promptTokens)
	rep.PromptTokens = len(prompt)
	if len(prompt)+cfg.maxTokens > e.Info().ContextLength {
		return rep, fmt.Errorf("%d prompt + %d new tokens do not fit the context window of %d", len(prompt), cfg.maxTokens, e.Info().ContextLength)
	}
	var ttfts, rates []float64
	for i := range cfg.runs + 1 {
		// Vary the first token so no run reuses the previous run's prefix.
		p := append([]int32(nil), prompt...)
		p[0] = prompt[i%len(prompt)]
		res, err := once(ctx, e, engine.Request{PromptIDs: p, MaxTokens: cfg.maxTokens})
		if err != nil {
			return rep, err
		}
		if i == 0 {
			continue // warm-up
		}
		ttfts = append(ttfts, float64(res.Timings.TimeToFirstToken.Microseconds())/1000)
		rates = append(rates, res.Timings.TokensPerSecond)
		rep.NewTokens = res.Usage.CompletionTokens
	}
	rep.TTFTms, rep.TokensPerSec = median(ttfts), median(rates)
	rep.PeakRSSMiB = peakRSSMiB()
	return rep, nil
}

// promptIDs encodes filler text and cuts it to n tokens.
func promptIDs(e *engine.Engine, n int) []int32 {
	const filler = "The quick brown fox jumps over the lazy dog while the river runs to the sea. "
	var text strings.Builder
	var ids []int32
	for len(ids) < n {
		for range 32 {
			text.WriteString(filler)
		}
		ids = e.Tokenizer().Encode(text.String())
	}
	return ids[:n]
}

func once(ctx context.Context, e *engine.Engine, req engine.Request) (engine.Result, error) {
	s, err := e.Stream(ctx, req)
	if err != nil {
		return engine.Result{}, err
	}
	defer s.Close()
	for s.Next() {
	}
	return s.Result(), s.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2 // an even count has two middles
	}
	return s[len(s)/2]
}

// peakRSSMiB reads VmHWM, the process's peak resident memory, from
// /proc/self/status (0 where there is no procfs).
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

func (r report) print(w io.Writer) {
	fmt.Fprintf(w, "model           %s\n", r.Model)
	if r.FallbackReason != "" {
		fmt.Fprintf(w, "device          %s (fell back: %s)\n", r.Device, r.FallbackReason)
	} else {
		fmt.Fprintf(w, "device          %s\n", r.Device)
	}
	fmt.Fprintf(w, "load            %.2f s\n", r.LoadSeconds)
	fmt.Fprintf(w, "prompt          %d tokens\n", r.PromptTokens)
	fmt.Fprintf(w, "generated       %d tokens per run, median of %d runs\n", r.NewTokens, r.Runs)
	fmt.Fprintf(w, "ttft            %.1f ms\n", r.TTFTms)
	fmt.Fprintf(w, "decode          %.1f tokens/s\n", r.TokensPerSec)
	fmt.Fprintf(w, "peak memory     %.0f MiB (VmHWM)\n", r.PeakRSSMiB)
}
