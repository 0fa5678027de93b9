package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// decodeBackend is a fake with vocab entries whose next token cycles
// through 7 ids, never EOS, with room for any b.N.
func decodeBackend(vocab int) *enginetest.Backend {
	b := enginetest.NewBackend("", 1<<24)
	b.ModelInfo.VocabSize = vocab
	b.Logits = func(dst []float32, _ []int32, step int) {
		clear(dst)
		dst['a'+step%7] = 30
	}
	return b
}

// BenchmarkDecode compares a bare loop over a Backend (Forward + argmax, what
// any caller must do, with the same blocked argmax as Stream's greedy
// sampler, so the two compare like for like) with Engine.Stream (greedy, no stop strings) on the
// same fake backend, per generated token. The difference is the per-token
// overhead of Stream; allocs/op must be 0. The logprobs cases show what a
// log-softmax over the vocabulary adds, beside "stream" with them off.
func BenchmarkDecode(b *testing.B) {
	for _, vocab := range []int{258, 151669} {
		name := "vocab=" + itoa(vocab)
		b.Run(name+"/bare", func(b *testing.B) {
			be := decodeBackend(vocab)
			ctx := context.Background()
			if err := be.Reserve(b.N + 2); err != nil {
				b.Fatal(err)
			}
			ids := []int32{'x'}
			logits, err := be.Forward(ctx, ids, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			defer func() { reportCPU(b, cpu0) }()
			for i := range b.N {
				ids[0] = engine.Argmax(logits) // the scan Stream's greedy sampler uses
				if logits, err = be.Forward(ctx, ids, i+1); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, c := range []struct {
			name string
			req  engine.Request
		}{
			{"stream", engine.Request{}},
			{"stream+stop+penalties+top_p", engine.Request{Stop: []string{"</s>", "\n\n"}, RepetitionPenalty: 1.1, Temperature: 0.7, TopP: 0.9}},
			{"stream+logprobs", engine.Request{Logprobs: true}},
			{"stream+logprobs+top20", engine.Request{Logprobs: true, TopLogprobs: engine.MaxTopLogprobs}},
		} {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				e, err := engine.New(decodeBackend(vocab), enginetest.ByteTokenizer{},
					engine.WithLoopGuard(engine.LoopGuard{Off: true}))
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				req := c.req
				req.Prompt, req.MaxTokens = "x", b.N+1
				s, err := e.Stream(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				defer func() { reportCPU(b, cpu0) }()
				for range b.N {
					if !s.Next() {
						b.Fatal(s.Err())
					}
				}
			})
		}
	}
}

// BenchmarkPrefixReuse measures time to first token of a chat's second turn
// (a 1000-token first turn, its reply, 10 new tokens) on a fake backend whose
// positions cost CPU time, with the first turn still in the cache ("reuse")
// and after another conversation evicted it ("cold").
func BenchmarkPrefixReuse(b *testing.B) {
	turn1 := strings.Repeat("The quick brown fox. ", 50)[:1000]
	for _, mode := range []string{"reuse", "cold"} {
		b.Run(mode, func(b *testing.B) {
			be := enginetest.NewBackend("Sure.", 8192)
			be.WorkPerPosition = 20000
			e, err := engine.New(be, enginetest.ByteTokenizer{})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			var ttft time.Duration
			for b.Loop() {
				reply, _, err := e.Generate(ctx, engine.Request{Prompt: turn1})
				if err != nil {
					b.Fatal(err)
				}
				if mode == "cold" {
					if _, _, err := e.Generate(ctx, engine.Request{Prompt: "another conversation"}); err != nil {
						b.Fatal(err)
					}
				}
				s, err := e.Stream(ctx, engine.Request{Prompt: turn1 + reply + " And then?", MaxTokens: 1})
				if err != nil {
					b.Fatal(err)
				}
				s.Next()
				s.Close()
				ttft += s.Result().Timings.TimeToFirstToken
			}
			b.ReportMetric(float64(ttft.Microseconds())/1000/float64(b.N), "ms/ttft")
		})
	}
}

// reportCPU adds the process CPU time per operation since cpu0 (cpu-ns/op).
func reportCPU(b *testing.B, cpu0 time.Duration) {
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
