// Command maskbench runs constrained-decoding test files in MaskBench's
// format (the JSONSchemaBench project) against engine/grammar and a real
// tokenizer:
//
//	go run ./internal/cmd/maskbench -tokenizer DIR [-out DIR] [-clock wall|cpu] [-cpuprofile FILE] FILE...
//
// Each FILE is {"schema": ..., "tests": [{"valid": bool, "data": ...,
// "description": ...}], "meta": ...}. The rules are those of MaskBench's
// runner and results script (maskbench/runner.py, scripts/maskbench_results.py):
// the schema is compiled (strict, so a keyword that cannot be enforced is a
// compile error) and ttfm_us is the compile time; every test's data is read
// as Python's json.loads reads it (one member per name, the last value at the
// first place) and serialised as json.dumps(data, ensure_ascii=False) writes
// it (", " and ": ", the file's key order), encoded without special tokens,
// and walked token by token: each step (the mask, the check that the token is
// in it, the advance) is timed into all_mask_us. An invalid instance must be
// refused at some token ("should reject" otherwise: an invalidation error; as
// in MaskBench, one refused only at the end of text counts as accepted, and
// the summary says how many); a valid one must be accepted to its last token
// and, stricter than MaskBench, be a place where the text may end. One status
// JSON per file goes to -out with MaskBench's field names (compile_error and
// validation_error absent when there is none); the summary gives the counts
// and percentiles the results script computes.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
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
	strict := fs.Bool("strict", true, "compile strict (a keyword that cannot be enforced is a compile error); false compiles with warnings and counts them")
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
		st, err := runFile(tok, vocab, clock, path, *strict)
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

// Status is one file's outcome, with MaskBench's field names. As in
// MaskBench's runner, compile_error and validation_error are absent (not
// null) when there is none: its results script tests for the key.
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
	CompileError    *string   `json:"compile_error,omitempty"`
	ValidationError *string   `json:"validation_error,omitempty"`
	// Warnings lists the keywords a non-strict compile left unenforced
	// (-strict=false); absent when there is none.
	Warnings []string `json:"warnings,omitempty"`
	// compileUs is the compile time alone, for the summary.
	compileUs float64
	// refused is the keyword a compile error names ("(none)" for an
	// error naming none, such as a schema no value satisfies).
	refused string
	// longBound is set when the schema has a minLength or maxLength above
	// 4,096, counted apart in the summary (the bound the grammar once
	// refused).
	longBound bool
	// invalidation is set when any invalid instance was accepted, so that
	// a later rejected valid instance cannot hide it (MaskBench's runner
	// keeps only the last failing test's message).
	invalidation bool
	// endOnly counts invalid instances whose every token was allowed but
	// after which the grammar cannot end: MaskBench counts them as
	// accepted, a decoder would refuse the end of text there.
	endOnly int
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

// runFile runs one MaskBench file by the rules of MaskBench's runner: the
// schema is compiled (ttfm_us is the compile time); each test's data, as
// Python's json.loads then json.dumps(data, ensure_ascii=False) give it,
// is encoded without special tokens; each token's step (the mask, then
// the check that the token is in it and the advance) is timed into
// all_mask_us. A valid instance must be accepted to its last token, and
// here also be a place where the text may end; an invalid one must be
// refused at some token.
func runFile(tok *tokenizer.Tokenizer, vocab *grammar.Vocabulary, now func() time.Duration, path string, strict bool) (Status, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Status{}, err
	}
	doc, err := jsonorder.Parse(data)
	if err != nil {
		return Status{}, err
	}
	doc = pythonLoads(doc)
	st := Status{ID: filepath.Base(path), AllMaskUs: []float64{}}
	schema := doc.Get("schema")
	tests := doc.Get("tests")
	if schema == nil || tests == nil || tests.Kind != jsonorder.Array {
		return st, fmt.Errorf("not a MaskBench file: needs \"schema\" and \"tests\"")
	}
	st.NumTests = len(tests.Items)
	st.longBound = longLengthBound(schema)
	t0 := now()
	g, err := grammar.CompileSchema(vocab, []byte(schema.Python()), grammar.Options{Strict: strict})
	compile := now() - t0
	st.compileUs = float64(compile.Nanoseconds()) / 1e3
	st.TTFMUs = compile.Microseconds()
	st.MaxTTFMUs = st.TTFMUs
	if err != nil {
		msg := err.Error()
		st.CompileError = &msg
		st.refused = "(none)"
		if se, ok := errors.AsType[*grammar.SchemaError](err); ok && se.Keyword != "" {
			st.refused = se.Keyword
		}
		return st, nil
	}
	for _, w := range g.Warnings() {
		st.Warnings = append(st.Warnings, w.String())
	}
	mask := make([]uint64, (vocab.Size()+63)/64)
	fail := func(invalidation bool, msg string) {
		if st.invalidation {
			return
		}
		st.invalidation = invalidation
		st.ValidationError = &msg
	}
	for i, tc := range tests.Items {
		valid := tc.Get("valid")
		inst := tc.Get("data")
		if valid == nil || inst == nil {
			return st, fmt.Errorf("test %d needs \"valid\" and \"data\"", i)
		}
		text := inst.Python()
		ids := tok.Encode(text)
		m := g.Start()
		refused := -1
		for k, id := range ids {
			t1 := now()
			clear(mask)
			m.Mask(mask)
			ok := mask[id>>6]&(1<<(id&63)) != 0 && m.Advance(id)
			d := now() - t1
			st.AllMaskUs = append(st.AllMaskUs, float64(d.Nanoseconds())/1e3)
			st.MasksUs += d.Microseconds()
			st.MaxMaskUs = max(st.MaxMaskUs, d.Microseconds())
			st.NumTokens++
			if !ok {
				refused = k
				break
			}
		}
		switch {
		case valid.Bool && refused >= 0:
			id := ids[refused]
			piece, _ := tok.Piece(id)
			fail(false, fmt.Sprintf("test #%d: should accept but didn't (token %d %q at %d in %q)", i, id, piece, refused, clip(text)))
		case valid.Bool && !m.CanEnd():
			fail(false, fmt.Sprintf("test #%d: should accept but didn't (every token allowed, but the text cannot end after %q)", i, clip(text)))
		case !valid.Bool && refused < 0:
			why := "every token allowed"
			if !m.CanEnd() {
				st.endOnly++
				why = "every token allowed; only the end of text is refused"
			}
			fail(true, fmt.Sprintf("test #%d: should reject but didn't (%s: %q)", i, why, clip(text)))
		case valid.Bool:
			st.NumValidTests++
		default:
			st.NumInvalidTests++
		}
	}
	return st, nil
}

// pythonLoads gives v the shape Python's json.loads gives a document: an
// object keeps one member per name, at the place of its first occurrence
// with the value of its last (a dict), and the integer -0 becomes 0.
func pythonLoads(v *jsonorder.Value) *jsonorder.Value {
	switch v.Kind {
	case jsonorder.Number:
		if v.Number == "-0" {
			return &jsonorder.Value{Kind: jsonorder.Number, Number: "0"}
		}
	case jsonorder.Array:
		for i, it := range v.Items {
			v.Items[i] = pythonLoads(it)
		}
	case jsonorder.Object:
		at := make(map[string]int, len(v.Members))
		members := v.Members[:0:0]
		for _, mb := range v.Members {
			val := pythonLoads(mb.Value)
			if j, ok := at[mb.Name]; ok {
				members[j].Value = val
				continue
			}
			at[mb.Name] = len(members)
			members = append(members, jsonorder.Member{Name: mb.Name, Value: val})
		}
		v.Members = members
	}
	return v
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// summarize prints the totals and percentiles the way MaskBench's results
// script computes them: a file with a compile error counts only as that;
// one whose validation_error says "should reject" is an invalidation error,
// any other a validation error; step times are every step of every
// compiled file (TBM), compile times those of the compiled files (TTFM).
func summarize(w io.Writer, all []Status) {
	var masks, rest, compiles []float64
	passing, compileErr, validation, invalidation, endOnly, warned := 0, 0, 0, 0, 0, 0
	refused := map[string]int{}
	long, longPassing, longRefused := 0, 0, 0
	for _, st := range all {
		if st.longBound {
			long++
			switch {
			case st.CompileError != nil:
				longRefused++
			case !st.invalidation && st.ValidationError == nil:
				longPassing++
			}
		}
		switch {
		case st.CompileError != nil:
			compileErr++
			refused[st.refused]++
			continue
		case st.invalidation:
			invalidation++
		case st.ValidationError != nil:
			validation++
		default:
			passing++
		}
		endOnly += st.endOnly
		if len(st.Warnings) > 0 {
			warned++
		}
		compiles = append(compiles, st.compileUs)
		masks = append(masks, st.AllMaskUs...)
		// The first step of a file is its start state's first visit; the
		// issue's speed goal leaves it out.
		if len(st.AllMaskUs) > 1 {
			rest = append(rest, st.AllMaskUs[1:]...)
		}
	}
	fmt.Fprintf(w, "schemas: %d\npassing: %d\ncompile errors: %d\nvalidation errors: %d\ninvalidation errors: %d\n",
		len(all), passing, compileErr, validation, invalidation)
	if compileErr > 0 {
		fmt.Fprintf(w, "compile errors by keyword:%s\n", byCount(refused))
	}
	fmt.Fprintf(w, "schemas with a length bound above 4,096: %d (passing %d, compile errors %d)\n", long, longPassing, longRefused)
	if warned > 0 {
		fmt.Fprintf(w, "compiled with warnings (keywords not enforced, -strict=false): %d\n", warned)
	}
	if endOnly > 0 {
		fmt.Fprintf(w, "invalid instances refused only at the end of text (counted as accepted, as MaskBench does): %d\n", endOnly)
	}
	fmt.Fprintf(w, "mask time (us, %d steps):%s\n", len(masks), percentiles(masks, 25, 50, 75, 90, 95, 99, 99.9))
	fmt.Fprintf(w, "mask time without each file's first step (us, %d steps):%s\n", len(rest), percentiles(rest, 25, 50, 75, 90, 95, 99, 99.9))
	fmt.Fprintf(w, "compile time (us, %d schemas):%s\n", len(compiles), percentiles(compiles, 25, 50, 75, 90, 99))
}

// byCount lists counts by key, the largest first (ties by key).
func byCount(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %d", k, m[k])
	}
	return b.String()
}

// longLengthBound reports whether a schema member named minLength or
// maxLength anywhere in v holds a number above 4,096 (a property that
// happens to be named so counts too: this is a report, not a rule).
func longLengthBound(v *jsonorder.Value) bool {
	switch v.Kind {
	case jsonorder.Object:
		for _, m := range v.Members {
			if (m.Name == "minLength" || m.Name == "maxLength") && m.Value.Kind == jsonorder.Number {
				if f, err := strconv.ParseFloat(string(m.Value.Number), 64); err == nil && f > 4096 {
					return true
				}
			}
			if longLengthBound(m.Value) {
				return true
			}
		}
	case jsonorder.Array:
		for _, it := range v.Items {
			if longLengthBound(it) {
				return true
			}
		}
	}
	return false
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
