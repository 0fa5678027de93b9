package tokenizer

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

// proseParagraphs is the English prose the throughput benchmarks encode,
// paragraph by paragraph: the license texts found in GOROOT and the Go module
// cache (read at benchmark time, never stored in the repository), in sorted
// path order, up to about 1 MiB.
var proseOnce = sync.OnceValue(func() []string {
	var files []string
	for _, root := range []string{goRoot(), goModCache()} {
		if root == "" {
			continue
		}
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "cache") {
				return filepath.SkipDir
			}
			if !d.IsDir() && (d.Name() == "LICENSE" || d.Name() == "LICENSE.txt" || d.Name() == "COPYING") {
				files = append(files, path)
			}
			return nil
		})
	}
	sort.Strings(files)
	seen := map[string]bool{}
	var paras []string
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		for _, p := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
			if p = strings.TrimSpace(p); p != "" {
				paras = append(paras, p)
				total += len(p)
			}
		}
		if total > 1<<20 {
			break
		}
	}
	return paras
})

// goRoot is the GOROOT of the go command running the tests.
func goRoot() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func goModCache() string {
	if v := os.Getenv("GOMODCACHE"); v != "" {
		return v
	}
	if v := os.Getenv("GOPATH"); v != "" {
		return filepath.Join(strings.Split(v, string(os.PathListSeparator))[0], "pkg", "mod")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "go", "pkg", "mod")
}

func benchEncodeProse(b *testing.B, fam string) {
	tok := familyTokenizer(b, fam)
	paras := proseOnce()
	if len(paras) == 0 {
		b.Skip("no license texts found")
	}
	n := 0
	for _, p := range paras {
		n += len(p)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	var ids []int32
	for b.Loop() {
		for _, p := range paras {
			ids = tok.AppendEncode(ids[:0], p)
		}
	}
}

// BenchmarkEncodeProse measures encode throughput on English prose, one
// paragraph at a time, as the side-by-side script does for transformers.js.
func BenchmarkEncodeProse(b *testing.B) {
	for _, fam := range fixtures.Families {
		b.Run(fam, func(b *testing.B) { benchEncodeProse(b, fam) })
	}
}

// BenchmarkEncodeBig encodes the 1 MiB parity input (mixed scripts, code,
// emoji) in one call.
func BenchmarkEncodeBig(b *testing.B) {
	for _, fam := range fixtures.Families {
		b.Run(fam, func(b *testing.B) {
			tok := familyTokenizer(b, fam)
			big := getBig(loadCorpus(b))
			b.SetBytes(int64(len(big)))
			var ids []int32
			for b.Loop() {
				ids = tok.AppendEncode(ids[:0], big)
			}
		})
	}
}

// BenchmarkLoad measures Load (time, and allocated bytes per load).
func BenchmarkLoad(b *testing.B) {
	for _, fam := range []string{"qwen3", "llama2", "gemma3"} {
		b.Run(fam, func(b *testing.B) {
			dir := fixtures.TokenizerDir(b, fam)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStreamDecode measures the streaming decoder per token; it must
// report 0 allocs/op.
func BenchmarkStreamDecode(b *testing.B) {
	for _, fam := range []string{"qwen3", "llama3_1", "llama2", "gemma3"} {
		b.Run(fam, func(b *testing.B) {
			tok := familyTokenizer(b, fam)
			ids := tok.Encode(getBig(loadCorpus(b))[:1<<16])
			d := tok.NewDecoder(true)
			out := make([]byte, 0, 1<<20)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if len(out) > 1<<19 {
					out = out[:0]
				}
				out = d.Append(out, ids[i])
				if i++; i == len(ids) {
					i = 0
					out = d.Flush(out)
				}
			}
		})
	}
}

// TestWriteProse writes the benchmark prose to PRISM_TOK_PROSE_OUT (for
// testdata/reference/bench.sh).
func TestWriteProse(t *testing.T) {
	out := os.Getenv("PRISM_TOK_PROSE_OUT")
	if out == "" {
		t.Skip("set PRISM_TOK_PROSE_OUT")
	}
	b, err := json.Marshal(proseOnce())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrintReference prints the reference module path (PRISM_TOK_PRINT_REF)
// or a family's tokenizer folder (PRISM_TOK_PRINT_DIR), installing or
// fetching them as needed (for bench.sh). It checks that what it prints is
// there, so bench.sh never runs against a path that does not exist, and
// skips (rather than passing vacuously) when asked for neither.
func TestPrintReference(t *testing.T) {
	ref, fam := os.Getenv("PRISM_TOK_PRINT_REF"), os.Getenv("PRISM_TOK_PRINT_DIR")
	if ref == "" && fam == "" {
		t.Skip("set PRISM_TOK_PRINT_REF or PRISM_TOK_PRINT_DIR")
	}
	if ref != "" {
		mod := referenceModule(t)
		if st, err := os.Stat(mod); err != nil || st.IsDir() {
			t.Fatalf("reference module %s: not a file (%v)", mod, err)
		}
		t.Logf("REFERENCE=%s", mod)
	}
	if fam != "" {
		dir := fixtures.TokenizerDir(t, fam)
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Fatalf("tokenizer folder of %s: %v", fam, err)
			}
		}
		t.Logf("DIR=%s", dir)
	}
}
