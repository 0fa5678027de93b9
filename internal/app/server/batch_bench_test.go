//go:build cgo

package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// batchBenchModel writes (once, into the cache) a random-weight model of
// the named shape over the real Qwen3 tokenizer and chat template, in a
// folder of its own, and returns that folder's parent for the catalog.
func batchBenchModel(b *testing.B, shape string) string {
	b.Helper()
	cfg := map[string]onnxgen.Config{"tiny": onnxgen.Tiny(), "qwen05b": onnxgen.Qwen25Half()}[shape]
	cfg.TokenizerDir = fixtures.TokenizerDir(b, "qwen3")
	cfg.Vocab = 0
	cfg.Context = 4096
	root, err := fixtures.CacheRoot()
	if err != nil {
		b.Fatal(err)
	}
	parent := filepath.Join(root, "bench-server-models", shape)
	dir := filepath.Join(parent, "model")
	if !onnxgen.Complete(dir, cfg) {
		start := time.Now()
		if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %s in %s", dir, time.Since(start).Round(time.Millisecond))
	}
	return parent
}

// batchBenchBody is stream i's request for an answer of tokens tokens
// (max_tokens, with penalties that keep a random-weight model from its
// end token and from one token over and over).
func batchBenchBody(i, tokens int) string {
	return fmt.Sprintf(`{"model":"model","stream":true,"stream_options":{"include_usage":true},"max_tokens":%d,`+
		`"temperature":0,"frequency_penalty":1,"presence_penalty":1,`+
		`"messages":[{"role":"user","content":"Stream %d: write on."}]}`, tokens, i)
}

// BenchmarkConcurrentStreams is the reference server with -max-batch 8,
// through HTTP, side by side in every iteration, for answers of 32 and 128
// tokens: 1, 4 and 8 streamed requests at once (tokens/s-sN: every stream's tokens per second of
// wall time; x-sN: over one stream's), then the time to first token of a
// request sent while seven others decode (ttft-busy-ms) beside the same
// request on an idle server (ttft-idle-ms) and a decode step of the
// seven (step-ms): the first should stay under the sum of the other two.
func BenchmarkConcurrentStreams(b *testing.B) {
	for _, shape := range []string{"tiny", "qwen05b"} {
		b.Run(shape, func(b *testing.B) {
			qs := startOn(b, batchBenchModel(b, shape), nil, nil, func(string) []prism.Option {
				return []prism.Option{prism.WithMaxBatch(8)}
			})
			streamOnce(b, qs, batchBenchBody(0, 8)) // load the model
			if st := qs.mgr.Stats(); st.MaxBatch != 8 {
				b.Fatalf("max batch %d: %s", st.MaxBatch, st.BatchReason)
			}
			for _, answer := range []int{32, 128} {
				b.Run(fmt.Sprintf("answer=%d", answer), func(b *testing.B) {
					benchConcurrent(b, qs, answer)
				})
			}
		})
	}
}

func benchConcurrent(b *testing.B, qs *qaServer, answer int) {
	sizes := []int{1, 4, 8}
	took := make([]time.Duration, len(sizes))
	tokens := make([]int, len(sizes))
	var busy, idle, step time.Duration
	for range b.N {
		for i, n := range sizes {
			d, t := concurrentStreams(b, qs, n, answer)
			took[i] += d
			tokens[i] += t
		}
		bz, st := ttftWhileBusy(b, qs, 7, answer)
		busy += bz
		step += st
		// The same request from the same cache state: the Forward
		// cache holds another stream's prompt.
		ttftOf(b, qs, batchBenchBody(300, 1))
		idle += ttftOf(b, qs, batchBenchBody(100, 1))
	}
	base := float64(tokens[0]) / took[0].Seconds()
	for i, n := range sizes {
		rate := float64(tokens[i]) / took[i].Seconds()
		b.ReportMetric(rate, fmt.Sprintf("tokens/s-s%d", n))
		b.ReportMetric(rate/base, fmt.Sprintf("x-s%d", n))
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(ms(busy), "ttft-busy-ms")
	b.ReportMetric(ms(idle), "ttft-idle-ms")
	b.ReportMetric(ms(step), "step-ms")
}

// concurrentStreams sends n streamed requests at once and returns the
// wall time until the last ends and their completion tokens.
func concurrentStreams(b *testing.B, qs *qaServer, n, answer int) (time.Duration, int) {
	counts := make([]int, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() { counts[i] = streamOnce(b, qs, batchBenchBody(i, answer)) })
	}
	wg.Wait()
	d := time.Since(start)
	total := 0
	for _, c := range counts {
		total += c
	}
	return d, total
}

// ttftWhileBusy starts others streams, waits until each has its first
// token, then measures the time to first token of one more request; it
// also returns the others' mean time between tokens meanwhile (one
// decode step of the batch).
func ttftWhileBusy(b *testing.B, qs *qaServer, others, answer int) (ttft, step time.Duration) {
	started := make(chan struct{}, others)
	steps := make([]time.Duration, others)
	var wg sync.WaitGroup
	for i := range others {
		wg.Go(func() {
			first, last, n := readTimedStream(b, qs, batchBenchBody(200+i, answer), started)
			if n > 1 {
				steps[i] = last.Sub(first) / time.Duration(n-1)
			}
		})
	}
	for range others {
		<-started
	}
	ttft = ttftOf(b, qs, batchBenchBody(100, 1))
	wg.Wait()
	for _, s := range steps {
		step += s
	}
	return ttft, step / time.Duration(others)
}

// ttftOf is the time from sending body to its first content chunk.
func ttftOf(b *testing.B, qs *qaServer, body string) time.Duration {
	start := time.Now()
	first, _, _ := readTimedStream(b, qs, body, nil)
	return first.Sub(start)
}

// readTimedStream sends a streamed chat request and reads it to its end; it
// returns when the first and the last content chunks came and how many
// there were, and signals started at the first.
func readTimedStream(b *testing.B, qs *qaServer, body string, started chan<- struct{}) (first, last time.Time, n int) {
	resp, err := qs.http.Post(qs.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("status %d", resp.StatusCode)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "data: ") || !strings.Contains(sc.Text(), `"delta":{`) {
			continue
		}
		now := time.Now()
		if n == 0 {
			first = now
			if started != nil {
				started <- struct{}{}
			}
		}
		last = now
		n++
	}
	if n == 0 && started != nil {
		started <- struct{}{}
	}
	return first, last, n
}
