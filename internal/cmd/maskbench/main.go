// Command maskbench runs constrained-decoding test files in MaskBench's
// format (the JSONSchemaBench project) against engine/grammar and a real
// tokenizer:
//
//	go run ./internal/cmd/maskbench -tokenizer DIR [-out DIR] [-clock wall|cpu] [-cpuprofile FILE] FILE...
//
// Each FILE is {"schema": ..., "tests": [{"valid": bool, "data": ...,
// "description": ...}], "meta": ...}. The schema is compiled (strict, so a
// keyword that cannot be enforced is a compile error); every test's data is
// serialised as Python's json.dumps(data, ensure_ascii=False) does, encoded,
// and walked token by token: the mask is computed (timed) and the token must
// be in it. A valid instance must be accepted to its end, an invalid one
// rejected at some token. One status JSON per file goes to -out, with
// MaskBench's field names; a summary goes to stdout.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/jsonorder"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "maskbench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("maskbench", flag.ContinueOnError)
	tokDir := fs.String("tokenizer", "", "folder holding tokenizer.json and tokenizer_config.json")
	out := fs.String("out", "", "folder for one status JSON per file (none when empty)")
	profile := fs.String("cpuprofile", "", "write a CPU profile to this file")
	clockName := fs.String("clock", "wall", "what mask and compile times measure: wall (MaskBench's) or cpu (the thread's CPU time, Linux)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *tokDir == "" || fs.NArg() == 0 {
		return errors.New("usage: maskbench -tokenizer DIR [-out DIR] [-clock wall|cpu] [-cpuprofile FILE] FILE [FILE ...]")
	}
	clock, err := newClock(*clockName)
	if err != nil {
		return err
	}
	tok, err := tokenizer.Load(*tokDir)
	if err != nil {
		return err
	}
	vocab, err := grammar.NewVocabulary(tok)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	var all []Status
	for _, path := range fs.Args() {
		st, err := runFile(tok, vocab, clock, path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		all = append(all, st)
		if *out != "" {
			b, _ := json.MarshalIndent(st, "", "  ")
			name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)) + ".json"
			if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
				return err
			}
		}
	}
	summarize(stdout, all)
	return nil
}

// Status is one file's outcome, with MaskBench's field names.
type Status struct {
	ID              string    `json:"id"`
	TTFMUs          int64     `json:"ttfm_us"`
	MaxTTFMUs       int64     `json:"max_ttfm_us"`
	MasksUs         int64     `json:"masks_us"`
	MaxMaskUs       int64     `json:"max_mask_us"`
	NumTokens       int       `json:"num_tokens"`
	NumTests        int       `json:"num_tests"`
	AllMaskUs       []float64 `json:"all_mask_us"`
	NumValidTests   int       `json:"num_valid_tests"`
	NumInvalidTests int       `json:"num_invalid_tests"`
	CompileError    *string   `json:"compile_error"`
	ValidationError *string   `json:"validation_error"`
	// compileUs is the compile time alone, for the summary.
	compileUs float64
}

// newClock returns the clock named by -clock.
func newClock(name string) (func() time.Duration, error) {
	switch name {
	case "wall":
		start := time.Now()
		return func() time.Duration { return time.Since(start) }, nil
	case "cpu":
		return threadClock()
	}
	return nil, fmt.Errorf("-clock %q: want wall or cpu", name)
}

// runFile runs one MaskBench file.
func runFile(tok *tokenizer.Tokenizer, vocab *grammar.Vocabulary, now func() time.Duration, path string) (Status, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Status{}, err
	}
	doc, err := jsonorder.Parse(data)
	if err != nil {
		return Status{}, err
	}
	st := Status{ID: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), AllMaskUs: []float64{}}
	schema := doc.Get("schema")
	tests := doc.Get("tests")
	if schema == nil || tests == nil || tests.Kind != jsonorder.Array {
		return st, fmt.Errorf("not a MaskBench file: needs \"schema\" and \"tests\"")
	}
	t0 := now()
	g, err := grammar.CompileSchema(vocab, []byte(schema.Python()), grammar.Options{Strict: true})
	compile := now() - t0
	st.compileUs = float64(compile.Nanoseconds()) / 1e3
	if err != nil {
		msg := err.Error()
		st.CompileError = &msg
		return st, nil
	}
	mask := make([]uint64, (vocab.Size()+63)/64)
	for i, tc := range tests.Items {
		valid := tc.Get("valid")
		inst := tc.Get("data")
		if valid == nil || inst == nil {
			return st, fmt.Errorf("test %d needs \"valid\" and \"data\"", i)
		}
		st.NumTests++
		if valid.Bool {
			st.NumValidTests++
		} else {
			st.NumInvalidTests++
		}
		text := inst.Python()
		ids := tok.Encode(text)
		m := g.Start()
		accepted := true
		for k, id := range ids {
			t1 := now()
			clear(mask)
			m.Mask(mask)
			d := now() - t1
			if k == 0 {
				ttfm := d.Microseconds()
				if i == 0 {
					ttfm += compile.Microseconds()
					st.TTFMUs = ttfm
				}
				st.MaxTTFMUs = max(st.MaxTTFMUs, ttfm)
			}
			st.AllMaskUs = append(st.AllMaskUs, float64(d.Nanoseconds())/1e3)
			st.MasksUs += d.Microseconds()
			st.MaxMaskUs = max(st.MaxMaskUs, d.Microseconds())
			st.NumTokens++
			if mask[id>>6]&(1<<(id&63)) == 0 || !m.Advance(id) {
				accepted = false
				if valid.Bool && st.ValidationError == nil {
					piece, _ := tok.Piece(id)
					msg := fmt.Sprintf("should accept test %d (token %d %q at %d in %q)", i, id, piece, k, clip(text))
					st.ValidationError = &msg
				}
				break
			}
		}
		if accepted && !m.CanEnd() {
			accepted = false
			if valid.Bool && st.ValidationError == nil {
				msg := fmt.Sprintf("should accept test %d (the text cannot end after %q)", i, clip(text))
				st.ValidationError = &msg
			}
		}
		if accepted && !valid.Bool && st.ValidationError == nil {
			msg := fmt.Sprintf("should reject test %d (%q)", i, clip(text))
			st.ValidationError = &msg
		}
	}
	return st, nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// summarize prints the totals and percentiles.
func summarize(w io.Writer, all []Status) {
	var masks, compiles []float64
	passing, compileErr, validation, invalidation := 0, 0, 0, 0
	for _, st := range all {
		switch {
		case st.CompileError != nil:
			compileErr++
			continue
		case st.ValidationError != nil && strings.HasPrefix(*st.ValidationError, "should accept"):
			validation++
		case st.ValidationError != nil:
			invalidation++
		default:
			passing++
		}
		compiles = append(compiles, st.compileUs)
		// The first mask of each file is part of ttfm, not of the step times.
		if len(st.AllMaskUs) > 1 {
			masks = append(masks, st.AllMaskUs[1:]...)
		}
	}
	fmt.Fprintf(w, "schemas: %d\npassing: %d\ncompile errors: %d\nvalidation errors: %d\ninvalidation errors: %d\n",
		len(all), passing, compileErr, validation, invalidation)
	fmt.Fprintf(w, "mask time (us, %d steps):%s\n", len(masks), percentiles(masks, 25, 50, 75, 90, 95, 99, 99.9))
	fmt.Fprintf(w, "compile time (us, %d schemas):%s\n", len(compiles), percentiles(compiles, 25, 50, 75, 90, 99))
}

func percentiles(xs []float64, ps ...float64) string {
	if len(xs) == 0 {
		return " none"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var b strings.Builder
	for _, p := range ps {
		i := min(int(p/100*float64(len(s))), len(s)-1)
		fmt.Fprintf(&b, " p%g=%.1f", p, s[i])
	}
	return b.String()
}
