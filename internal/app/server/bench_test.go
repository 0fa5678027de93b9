//go:build cgo

package server_test

// The server's speed targets (docs/performance.md, "internal/app/server"), each
// side by side with what it is compared to.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/fixtures"
)

// discard is a ResponseWriter that flushes to nowhere: the handler's own
// cost without a network.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// cost is the time and allocations of one measured run.
type cost struct {
	d      time.Duration
	allocs uint64
}

func measure(f func()) cost {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	f()
	d := time.Since(start)
	runtime.ReadMemStats(&m1)
	return cost{d, m1.Mallocs - m0.Mallocs}
}

// marginal reports the cost per token of the tokens a long run has over a
// short one, so what each request pays once (decoding, the template, the
// prefill) drops out.
func marginal(b *testing.B, short, long func(), extra int) {
	b.Helper()
	var ds, dl time.Duration
	var as, al uint64
	for b.Loop() {
		s, l := measure(short), measure(long)
		ds, dl, as, al = ds+s.d, dl+l.d, as+s.allocs, al+l.allocs
	}
	n := float64(b.N) * float64(extra)
	b.ReportMetric(float64(dl-ds)/n, "ns/token")
	b.ReportMetric((float64(al)-float64(as))/n, "allocs/token")
}

// BenchmarkStreamedToken is the server's cost per streamed token: the chat
// handler's whole path for each token (reasoning split and tool-call
// parse, chunk encode, SSE frame, write, flush) over the fake model,
// beside Engine.Stream alone over the same backend. The difference is
// what the server adds per token.
func BenchmarkStreamedToken(b *testing.B) {
	const short, long = 100, 2100
	body := fakeChat + `,"stream":true}`
	b.Run("handler", func(b *testing.B) {
		fs, fl := newFake(b, letters(short), nil), newFake(b, letters(long), nil)
		run := func(fs *fakeServer) func() {
			return func() {
				req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Host = "127.0.0.1"
				fs.handler.ServeHTTP(&discard{h: http.Header{}}, req)
			}
		}
		run(fs)()
		run(fl)()
		marginal(b, run(fs), run(fl), long-short)
	})
	b.Run("engine", func(b *testing.B) {
		es := enginetest.NewEngine(b, letters(short))
		el := enginetest.NewEngine(b, letters(long))
		run := func(e *engine.Engine) func() {
			return func() {
				st, err := e.Stream(context.Background(), engine.Request{Prompt: "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"})
				if err != nil {
					b.Fatal(err)
				}
				for st.Next() {
				}
				st.Close()
			}
		}
		marginal(b, run(es), run(el), long-short)
	})
}

// BenchmarkTokensPerSecond is generation speed at the tiny shape (the
// "count" model: 2 layers, hidden 64, the Qwen3 vocabulary) through the
// server — a streamed chat completion over loopback HTTP, read by a client
// — beside Engine.Stream on the same model with the same prompt tokens.
func BenchmarkTokensPerSecond(b *testing.B) {
	dir := qaModels.Path(b)
	qs := startOn(b, dir, nil, nil, nil)
	_, tmpl := qs.call(b, http.MethodPost, "/apply-template", `{"model":"count","messages":[{"role":"user","content":"Count."}]}`, nil)
	prompt, _ := tmpl["prompt"].(string)
	body := `{"model":"count","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Count."}]}`
	b.Run("engine", func(b *testing.B) {
		eng, err := prism.Open(context.Background(), filepath.Join(dir, "count"), prism.WithDevice("cpu"), prism.WithORTLibrary(fixtures.ORTLib(b)),
			prism.WithoutLoadLock())
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close()
		tokens, cpu0 := 0, cpuTime()
		for b.Loop() {
			st, err := eng.Stream(context.Background(), engine.Request{Prompt: prompt})
			if err != nil {
				b.Fatal(err)
			}
			for st.Next() {
			}
			tokens += st.Result().Usage.CompletionTokens
			st.Close()
		}
		report(b, tokens, cpu0)
	})
	b.Run("server", func(b *testing.B) {
		streamOnce(b, qs, body) // load the model
		tokens, cpu0 := 0, cpuTime()
		for b.Loop() {
			tokens += streamOnce(b, qs, body)
		}
		report(b, tokens, cpu0)
	})
}

// report gives tokens/s (wall) and the process's CPU time per token (the
// steadier figure on a loaded machine; on the server side it includes the
// client reading the stream).
func report(b *testing.B, tokens int, cpu0 time.Duration) {
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(tokens), "cpu-ns/token")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// streamOnce sends a streamed chat completion with include_usage, reads it
// to [DONE] and returns its completion tokens.
func streamOnce(b testing.TB, qs *qaServer, body string) int {
	b.Helper()
	resp, err := qs.http.Post(qs.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	tokens := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || !strings.Contains(data, `"usage"`) {
			continue
		}
		var u struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &u); err != nil {
			b.Fatal(err)
		}
		tokens = u.Usage.CompletionTokens
	}
	if tokens == 0 {
		b.Fatalf("no usage chunk (status %d)", resp.StatusCode)
	}
	return tokens
}

// healthPerOp is the GET /health requests of one benchmark operation, so a
// few operations give percentiles.
const healthPerOp = 200

// BenchmarkHealthWhileGenerating is GET /health answered while a streamed
// generation runs the whole time (the engine lock held), beside /health
// on an idle server; an operation is 200 requests, one after the other, and
// it reports their 50th and 99th percentiles.
func BenchmarkHealthWhileGenerating(b *testing.B) {
	dir := qaModels.Path(b)
	body := `{"model":"count","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Count."}]}`
	for _, busy := range []bool{false, true} {
		name := map[bool]string{false: "idle", true: "generating"}[busy]
		b.Run(name, func(b *testing.B) {
			qs := startOn(b, dir, nil, nil, nil)
			streamOnce(b, qs, body) // load the model
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if busy {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
							streamOnce(b, qs, body)
						}
					}
				})
				waitFor(b, func() bool { return qs.mgr.Stats().InUse })
			}
			var lat []time.Duration
			for b.Loop() {
				for range healthPerOp {
					start := time.Now()
					resp, err := qs.http.Get(qs.url + "/health")
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					lat = append(lat, time.Since(start))
				}
			}
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkConversationTTFT is time to first token through the server
// over a 10-turn conversation (each user turn ≈ 60 tokens, the answers
// sent back with their reasoning as clients do), on the "chat" model.
// "reuse" runs the turns back to back, so the engine's cache holds the
// conversation; "cold" sends an unrelated request before each turn, so
// every turn computes its whole prompt. It reports the first and the last
// turn's time to first token and the last turn's cached tokens.
func BenchmarkConversationTTFT(b *testing.B) {
	qs := startOn(b, qaModels.Path(b), nil, nil, nil)
	qs.serves(b, "chat")
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "reuse", true: "cold"}[cold], func(b *testing.B) {
			var first, last time.Duration
			cached, conv := 0, 0
			for b.Loop() {
				conv++
				var msgs []map[string]any
				for turn := 1; turn <= 10; turn++ {
					q := question(turn)
					if turn == 1 {
						q = fmt.Sprintf("Conversation %d. %s", conv, q) // a new one each time: turn 1 starts cold
					}
					msgs = append(msgs, map[string]any{"role": "user", "content": q})
					if cold {
						qs.serves(b, "chat")
					}
					ttft, n, reply := timedTurn(b, qs, msgs)
					if turn == 1 {
						first += ttft
					}
					if turn == 10 {
						last, cached = last+ttft, n
					}
					msgs = append(msgs, reply)
				}
			}
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ttft-turn1-ms")
			b.ReportMetric(float64(last.Microseconds())/1000/float64(b.N), "ttft-turn10-ms")
			b.ReportMetric(float64(cached), "cached-turn10")
		})
	}
}

// timedTurn streams one chat turn and returns the time to its first
// generated text, the cached prompt tokens, and the assistant message to
// send back (content and reasoning, as the client received them).
func timedTurn(b *testing.B, qs *qaServer, msgs []map[string]any) (time.Duration, int, map[string]any) {
	b.Helper()
	body, _ := json.Marshal(map[string]any{"model": "chat", "messages": msgs, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	start := time.Now()
	resp, err := qs.http.Post(qs.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var ttft time.Duration
	var content, reasoning strings.Builder
	cached := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				}
			}
			Usage *struct {
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			b.Fatal(err)
		}
		if c.Usage != nil {
			cached = c.Usage.Details.Cached
		}
		if len(c.Choices) == 0 {
			continue
		}
		d := c.Choices[0].Delta
		if ttft == 0 && d.Content+d.ReasoningContent != "" {
			ttft = time.Since(start)
		}
		content.WriteString(d.Content)
		reasoning.WriteString(d.ReasoningContent)
	}
	if ttft == 0 {
		b.Fatalf("no text (status %d)", resp.StatusCode)
	}
	return ttft, cached, map[string]any{"role": "assistant", "content": content.String(), "reasoning_content": reasoning.String()}
}
