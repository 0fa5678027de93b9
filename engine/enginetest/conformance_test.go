package enginetest_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

func TestConformanceOfTheFake(t *testing.T) {
	for _, script := range []string{"Hello, world! How are you?", "héllo → wörld ✓ 日本語です"} {
		t.Run(script, func(t *testing.T) {
			enginetest.RunConformance(t, enginetest.Harness{
				Script: script,
				New: func(t *testing.T, opts ...engine.Option) *engine.Engine {
					return enginetest.NewEngine(t, script, opts...)
				},
				Looping: func(t *testing.T, opts ...engine.Option) *engine.Engine {
					return enginetest.NewEngine(t, strings.Repeat("la la ", 100), opts...)
				},
			})
		})
	}
}

func TestBatchConformanceOfTheFake(t *testing.T) {
	var mu sync.Mutex
	backends := map[*engine.Engine]*enginetest.Backend{}
	enginetest.RunBatchConformance(t, enginetest.BatchHarness{
		New: func(t *testing.T, opts ...engine.Option) *engine.Engine {
			b := enginetest.NewBackend("", 0)
			b.Logits, b.MaxBatch = varied, 4
			e, _ := enginetest.NewEngineBackend(t, b, opts...)
			mu.Lock()
			backends[e] = b
			mu.Unlock()
			return e
		},
		Constraint: func(*engine.Engine) engine.Constraint { return letters{min: 3, max: 20} },
		MaxDecodeBatch: func(e *engine.Engine) int {
			mu.Lock()
			defer mu.Unlock()
			return backends[e].Stats().MaxDecodeBatch
		},
	})
}

// varied predicts from the last two ids and the position: different
// prompts give different replies of different lengths (an EOS comes
// after some steps), the same ids always the same one. Every other id
// gets a smaller logit that also varies, so a constraint picks among
// them.
func varied(dst []float32, cache []int32, step int) {
	n := len(cache)
	h := uint32(n)*2654435761 ^ uint32(cache[n-1])*40503
	if n > 1 {
		h ^= uint32(cache[n-2]) * 97
	}
	for i := range dst {
		dst[i] = float32((h>>3 + uint32(i)*7) % 11)
	}
	next := int32(' ')
	switch k := h % 40; {
	case k < 26:
		next = 'a' + int32(k)
	case k < 36:
		next = '0' + int32(k-26)
	}
	if step >= 5 && h%9 == 0 {
		next = enginetest.EOS
	}
	dst[next] = 30
}

// letters allows only the lowercase letters, min to max of them, and may
// end after min.
type letters struct{ min, max int }

func (c letters) VocabSize() int             { return enginetest.ByteVocab }
func (c letters) NewMatcher() engine.Matcher { return &letterState{c: c} }

type letterState struct {
	c letters
	n int
}

func (m *letterState) Mask(allowed []uint64) bool {
	if m.n < m.c.max {
		for id := 'a'; id <= 'z'; id++ {
			allowed[id>>6] |= 1 << (id & 63)
		}
	}
	return m.n >= m.c.min
}

func (m *letterState) Advance(id int32) bool {
	if id < 'a' || id > 'z' || m.n >= m.c.max {
		return false
	}
	m.n++
	return true
}

// The Stream contract holds on an engine that decodes in batches too.
func TestConformanceOfTheBatchingFake(t *testing.T) {
	batching := func(reply string) func(t *testing.T, opts ...engine.Option) *engine.Engine {
		return func(t *testing.T, opts ...engine.Option) *engine.Engine {
			b := enginetest.NewBackend(reply, 0)
			b.MaxBatch = 4
			e, _ := enginetest.NewEngineBackend(t, b, append([]engine.Option{engine.WithMaxBatch(4)}, opts...)...)
			return e
		}
	}
	script := "Hello, world! How are you?"
	enginetest.RunConformance(t, enginetest.Harness{
		Script:  script,
		New:     batching(script),
		Looping: batching(strings.Repeat("la la ", 100)),
	})
}
