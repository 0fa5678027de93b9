package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// hashed predicts the next id from the last two ids and the position, so
// every prompt gets its own reply and the same ids always the same
// logits; an EOS comes after some steps.
func hashed(dst []float32, cache []int32, step int) {
	n := len(cache)
	h := uint32(n)*2654435761 ^ uint32(cache[n-1])*40503
	if n > 1 {
		h ^= uint32(cache[n-2]) * 97
	}
	clear(dst)
	next := 'a' + int32(h%26)
	if step >= 3 && h%13 == 0 {
		next = enginetest.EOS
	}
	dst[next] = 30
}

// batchCase is one request of a fuzzed batch: its prompt, its max_tokens
// and after how many tokens its caller closes it (0: never).
type batchCase struct {
	prompt    string
	maxTokens int
	closeAt   int
}

// batchCases reads up to eight requests from data, four bytes each.
func batchCases(data []byte) []batchCase {
	var cs []batchCase
	for len(data) >= 4 && len(cs) < 8 {
		d := data[:4]
		data = data[4:]
		cs = append(cs, batchCase{prompt: string([]byte{'a' + d[0]%26, 'a' + d[1]%26})[:1+int(d[1]%2)],
			maxTokens: 1 + int(d[2]%40), closeAt: int(d[3] % 50)})
	}
	return cs
}

// tokens reads s until it ends or closeAt tokens came (0: never).
func tokens(s *engine.Stream, closeAt int) []int32 {
	defer s.Close()
	var ids []int32
	for s.Next() {
		ids = append(ids, s.Token().ID)
		if len(ids) == closeAt {
			break
		}
	}
	return ids
}

// FuzzBatch: however many requests arrive at once, of whatever prompts
// and lengths, and wherever their callers leave, every request decoded in
// batches gives the tokens it gives alone (those its caller read), and
// the engine closes with nothing left running.
func FuzzBatch(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 4, 5, 39, 7, 9, 9, 9, 0})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		cs := batchCases(data)
		if len(cs) == 0 {
			return
		}
		newEngine := func(maxBatch int) *engine.Engine {
			b := enginetest.NewBackend("", 0)
			b.Logits, b.MaxBatch = hashed, 4
			e, _ := enginetest.NewEngineBackend(t, b, engine.WithMaxBatch(maxBatch), engine.WithLoopGuard(engine.LoopGuard{Off: true}))
			return e
		}
		serial, batched := newEngine(1), newEngine(4)
		want := make([][]int32, len(cs))
		for i, c := range cs {
			s, err := serial.Stream(context.Background(), engine.Request{Prompt: c.prompt, MaxTokens: c.maxTokens})
			if err != nil {
				t.Fatal(err)
			}
			want[i] = tokens(s, c.closeAt)
		}
		got := make([][]int32, len(cs))
		errs := make([]error, len(cs))
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Go(func() {
				s, err := batched.Stream(context.Background(), engine.Request{Prompt: c.prompt, MaxTokens: c.maxTokens})
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = tokens(s, c.closeAt)
			})
		}
		wg.Wait()
		for i := range cs {
			if errs[i] != nil {
				t.Fatalf("request %d (%+v): %v", i, cs[i], errs[i])
			}
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("request %d (%+v): batched %v, alone %v", i, cs[i], got[i], want[i])
			}
		}
		if err := batched.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
