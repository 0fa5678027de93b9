//go:build unix

package tokenizer

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism/internal/fixtures"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCPUThroughput reports encode throughput per CPU second (not wall
// time), for measuring on a busy machine. Run with PRISM_TOK_CPU=1.
func TestCPUThroughput(t *testing.T) {
	if os.Getenv("PRISM_TOK_CPU") == "" {
		t.Skip("set PRISM_TOK_CPU=1")
	}
	for _, fam := range []string{"qwen3", "llama2", "gemma3", "llama3_1"} {
		tok := familyTokenizer(t, fam)
		paras := proseOnce()
		n := 0
		for _, p := range paras {
			n += len(p)
		}
		var ids []int32
		for _, p := range paras {
			ids = tok.AppendEncode(ids[:0], p)
		}
		c0 := cpuTime()
		const reps = 5
		for r := 0; r < reps; r++ {
			for _, p := range paras {
				ids = tok.AppendEncode(ids[:0], p)
			}
		}
		d := cpuTime() - c0
		t.Logf("%s: %.1f MB/s per CPU second (%d bytes x %d)", fam, float64(n*reps)/d.Seconds()/1e6, n, reps)
	}
}

// TestLoadCPU reports Load's CPU time and heap for each family. Run with
// PRISM_TOK_CPU=1.
func TestLoadCPU(t *testing.T) {
	if os.Getenv("PRISM_TOK_CPU") == "" {
		t.Skip("set PRISM_TOK_CPU=1")
	}
	for _, fam := range []string{"qwen3", "llama2", "gemma3"} {
		dir := fixtures.TokenizerDir(t, fam)
		_, _ = os.ReadFile(dir + "/tokenizer.json") // warm the page cache
		c0, w0 := cpuTime(), time.Now()
		if _, err := Load(dir); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: Load %v CPU, %v wall", fam, cpuTime()-c0, time.Since(w0))
	}
}

// TestStreamCPU reports the streaming decoder's CPU time per token. Run
// with PRISM_TOK_CPU=1.
func TestStreamCPU(t *testing.T) {
	if os.Getenv("PRISM_TOK_CPU") == "" {
		t.Skip("set PRISM_TOK_CPU=1")
	}
	for _, fam := range []string{"qwen3", "llama3_1", "llama2"} {
		tok := familyTokenizer(t, fam)
		ids := tok.Encode(getBig(loadCorpus(t))[:1<<16])
		d := tok.NewDecoder(true)
		out := make([]byte, 0, 1<<20)
		c0 := cpuTime()
		const reps = 50
		for r := 0; r < reps; r++ {
			out = out[:0]
			for _, id := range ids {
				out = d.Append(out, id)
			}
			out = d.Flush(out)
		}
		t.Logf("%s: %.1f ns CPU per token", fam, float64(cpuTime()-c0)/float64(reps*len(ids)))
	}
}

// TestLoadRSS loads one family (PRISM_TOK_RSS=<family>) and reports the
// process's peak resident set and live heap; run it alone in a fresh
// process: go test -run TestLoadRSS (with PRISM_TOK_RSS=qwen3).
func TestLoadRSS(t *testing.T) {
	fam := os.Getenv("PRISM_TOK_RSS")
	if fam == "" {
		t.Skip("set PRISM_TOK_RSS=<family>")
	}
	tok, err := Load(fixtures.TokenizerDir(t, fam))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("%s: peak RSS %d MB, live heap %d MB after GC", fam, ru.Maxrss/1024, ms.HeapAlloc>>20)
	runtime.KeepAlive(tok)
}
