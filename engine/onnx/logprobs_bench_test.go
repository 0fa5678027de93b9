//go:build cgo

package onnx

import (
	"context"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// BenchmarkStreamLogprobs is BenchmarkStream's greedy decode at the tiny
// shape (the Qwen3 vocabulary of 151669 ids) with logprobs off, on, and
// with 5 and 20 alternatives, side by side: the cost of a log-softmax over
// the vocabulary per token, and that logprobs off costs nothing.
func BenchmarkStreamLogprobs(b *testing.B) {
	be := openModel(b, benchModel(b, "tiny"), benchOptions())
	e, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)),
		engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, c := range []struct {
		name string
		on   bool
		top  int
	}{{"off", false, 0}, {"on", true, 0}, {"top5", true, 5}, {"top20", true, 20}} {
		b.Run(c.name, func(b *testing.B) {
			req := engine.Request{PromptIDs: promptIDs(16), MaxTokens: benchNewTokens, Logprobs: c.on, TopLogprobs: c.top}
			run := func() engine.Result {
				s, err := e.Stream(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				for s.Next() {
				}
				if s.Err() != nil {
					b.Fatal(s.Err())
				}
				return s.Result()
			}
			run()
			b.ReportAllocs()
			b.ResetTimer()
			var gen time.Duration
			var tokens int
			for range b.N {
				r := run()
				gen += r.Timings.Generation
				tokens += r.Usage.CompletionTokens - 1
			}
			b.ReportMetric(float64(gen.Nanoseconds())/float64(tokens), "ns/token")
		})
	}
}
