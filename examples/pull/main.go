// Command pull fetches an ONNX model from the Hugging Face hub into the hub
// cache, where examples/serve, the MCP server and the ACP agent find it:
//
//	go run ./examples/pull onnx-community/Qwen3-0.6B-ONNX:q4
//	go run ./examples/pull OWNER/NAME[:VARIANT] [-revision R] [-parallel N] [-plain]
//
// It is a thin main over prism.Pull; the hub settings come from the
// environment as huggingface_hub reads them (HF_HUB_CACHE, HF_HOME,
// HF_ENDPOINT, HF_TOKEN and the token file, HF_HUB_OFFLINE). On a terminal
// it draws a progress bar; otherwise it prints a line per file and one a
// few seconds apart. docs/cli.md describes it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/errcode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
	stop()
	os.Exit(code)
}

// options are the command line.
type options struct {
	model    string
	revision string
	parallel int
	plain    bool
}

// parseArgs reads the flags before or after the model, as the usage line
// shows them after it.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.revision, "revision", "main", "branch, tag or commit to pull")
	fs.IntVar(&o.parallel, "parallel", 4, "files downloaded at once")
	fs.BoolVar(&o.plain, "plain", false, "print progress as plain lines even on a terminal")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: pull OWNER/NAME[:VARIANT] [-revision R] [-parallel N] [-plain]")
		fs.PrintDefaults()
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fs.Usage()
		return o, fmt.Errorf("want one model, have %d", len(positional))
	}
	if o.parallel < 1 {
		return o, fmt.Errorf("-parallel %d: want 1 or more", o.parallel)
	}
	o.model = positional[0]
	return o, nil
}

// run is the command; it returns the exit status.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer, terminal bool) int {
	o, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "pull:", err)
		return 2
	}
	var view progressView = &lines{w: stderr}
	if terminal && !o.plain {
		view = newBar(stderr)
	}
	res, err := prism.Pull(ctx, o.model, prism.PullEnv(environ), prism.PullRevision(o.revision),
		prism.PullParallel(o.parallel), prism.PullProgressFunc(view.update))
	view.finish()
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "pull: interrupted; run the same command again to resume")
			return 130
		}
		fmt.Fprintf(stderr, "pull: %v (%s)\n", err, errcode.Of(err))
		return 1
	}
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, "pull: note:", n)
	}
	variant := res.Variant
	if variant == "" {
		variant = "the only graph"
	}
	others := strings.Join(prismOthers(res.Variants, res.Variant), ", ")
	if others == "" {
		others = "none"
	}
	fmt.Fprintf(stdout, "pulled %s@%s (%s; %d files, %s, %s downloaded; other variants on the hub: %s)\n",
		res.Repo, res.Commit[:12], variant, len(res.Files), formatBytes(res.Bytes), formatBytes(res.Downloaded), others)
	fmt.Fprintln(stdout, res.Dir)
	fmt.Fprintf(stdout, "serve it with: go run ./examples/serve -model %s\n", res.Repo)
	return 0
}

func prismOthers(present []string, picked string) []string {
	var out []string
	for _, v := range present {
		if v != picked {
			out = append(out, v)
		}
	}
	return out
}

// progressView shows the reports.
type progressView interface {
	update(prism.PullProgress)
	finish()
}

// lines prints a line when a file completes and otherwise one every few
// seconds, for logs and pipes.
type lines struct {
	w    io.Writer
	last time.Time
	done int
}

const lineEvery = 2 * time.Second

func (l *lines) update(p prism.PullProgress) {
	switch {
	case p.Status == "listing":
		fmt.Fprintf(l.w, "listing %s at %s\n", p.Repo, p.Revision)
	case p.Status == "downloading" && p.FilesDone > l.done:
		l.done = p.FilesDone
		fmt.Fprintf(l.w, "%d/%d %s (%s)  %s\n", p.FilesDone, p.Files, p.File, formatBytes(p.FileSize), totals(p))
	case p.Status == "downloading" && time.Since(l.last) >= lineEvery:
		l.last = time.Now()
		fmt.Fprintf(l.w, "    %s %s of %s  %s\n", p.File, formatBytes(p.FileBytes), formatBytes(p.FileSize), totals(p))
	case p.Status == "linking" || p.Status == "done":
		fmt.Fprintf(l.w, "%s %s\n", p.Status, p.Repo)
	}
}

func (l *lines) finish() {}

// totals is the pull's bytes, rate and time left.
func totals(p prism.PullProgress) string {
	s := fmt.Sprintf("%s / %s", formatBytes(p.Bytes), formatBytes(p.Total))
	if p.Total > 0 {
		s += fmt.Sprintf(" (%d%%)", p.Bytes*100/p.Total)
	}
	if p.Rate > 0 {
		s += fmt.Sprintf(", %s/s", formatBytes(int64(p.Rate)))
	}
	if p.Remaining > 0 {
		s += ", " + p.Remaining.Round(time.Second).String() + " left"
	}
	return s
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
