package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prism-local/prism/engine"
)

// Backend is a scripted engine.Backend. After any prompt it predicts the
// tokens of Reply one by one, then its first EOS id, then EOS again; the
// prediction is a logit of 30 for the scripted token and 0 for every other
// one, so greedy decoding and ordinary sampling both follow the script.
// Logits replaces that rule when set.
//
// It keeps its cache of ids like a real backend, honours Forward's pos (so
// prefix reuse and chunked prefill are observable through Stats) and can
// burn CPU per computed position (WorkPerPosition) for benchmarks.
//
// A forward is taken as a decode step when it is exactly the token
// predicted after the position before it; any other forward is prefill
// and restarts the script. Verify (speculative decoding) runs its tokens
// as that many one-token forwards and returns every row; a later forward
// at a lower position rolls the cache back, as a real backend's does.
// Speculation is on (ModelInfo.Speculation) unless ModelInfo sets it. (A final prefill chunk of one token that
// happens to equal the script's first token is mistaken for a decode step;
// avoid a prefill chunk of 1 with such prompts.)
type Backend struct {
	// ModelInfo is what Info returns. Zero VocabSize, ContextLength and EOS
	// default to the byte tokenizer's vocabulary, 4096 and [EOS].
	ModelInfo engine.ModelInfo
	// Reply is the scripted output.
	Reply []int32
	// Logits, when set, computes the next-token logits instead of the
	// script: cache holds the ids at positions 0..len(cache)-1, step counts
	// decode steps since the prefill. It fills dst (VocabSize values).
	Logits func(dst []float32, cache []int32, step int)
	// WorkPerPosition is a number of multiply-adds done per computed
	// position, to give positions a cost.
	WorkPerPosition int
	// Hook, when set, runs at the start of every Forward; an error it
	// returns is returned by Forward.
	Hook func(ctx context.Context, ids []int32, pos int) error

	mu     sync.Mutex
	cache  []int32
	logits []float32
	rows   []float32
	// stepAt and expAt hold, per cached position, the decode steps since
	// the prefill and the id predicted after it (-1 inside a prefill).
	stepAt  []int
	expAt   []int32
	stats   Stats
	scratch []float32
}

// Stats counts what the backend was asked to do.
type Stats struct {
	// Forwards counts Forward calls; Positions the positions they computed.
	Forwards, Positions int
	// Reserves counts Reserve calls; Reserved is the last size asked for.
	Reserves, Reserved int
	// Closed reports whether Close was called.
	Closed bool
	// LastChunk is the number of ids of the most recent Forward.
	LastChunk int
	// MaxChunk is the largest number of ids one Forward received.
	MaxChunk int
	// Verifies counts Verify calls (also counted in Forwards).
	Verifies int
}

// NewBackend returns a backend that replies with reply, encoded by the byte
// tokenizer, and has a context window of contextLength tokens (0: 4096).
func NewBackend(reply string, contextLength int) *Backend {
	return &Backend{
		ModelInfo: engine.ModelInfo{ID: "scripted", Device: "cpu", ContextLength: contextLength},
		Reply:     ByteTokenizer{}.Encode(reply),
	}
}

// Info reports the configured ModelInfo with defaults filled in.
func (b *Backend) Info() engine.ModelInfo {
	info := b.ModelInfo
	if info.VocabSize == 0 {
		info.VocabSize = ByteVocab
	}
	if info.ContextLength == 0 {
		info.ContextLength = 4096
	}
	if len(info.EOS) == 0 {
		info.EOS = []int32{EOS}
	}
	if info.Device == "" {
		info.Device = "cpu"
	}
	if info.Speculation == "" {
		info.Speculation, info.SpeculationReason = engine.SpeculationPromptLookup, "the scripted backend verifies by running its tokens one by one"
	}
	return info
}

// Reserve records the request's size. Like a real backend it refuses a
// size below one or beyond the context window.
func (b *Backend) Reserve(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stats.Closed {
		return errors.New("enginetest: backend is closed")
	}
	if n < 1 {
		return fmt.Errorf("enginetest: reserve of %d positions; a request needs at least one", n)
	}
	if n > b.Info().ContextLength {
		return fmt.Errorf("enginetest: reserve %d positions beyond context length %d", n, b.Info().ContextLength)
	}
	b.stats.Reserves++
	b.stats.Reserved = n
	if cap(b.cache) < n {
		grown := make([]int32, len(b.cache), n)
		copy(grown, b.cache)
		b.cache = grown
	}
	return nil
}

// Forward computes ids at positions pos.. and returns the next logits.
func (b *Backend) Forward(ctx context.Context, ids []int32, pos int) ([]float32, error) {
	if err := b.begin(ctx, ids, pos); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	return b.compute(ids, pos), nil
}

// Verify computes ids at positions pos.. as one-token forwards and returns
// the logits after each of them, row after row.
func (b *Backend) Verify(ctx context.Context, ids []int32, pos int) ([]float32, error) {
	if err := b.begin(ctx, ids, pos); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	b.stats.Verifies++
	v := b.Info().VocabSize
	if cap(b.rows) < len(ids)*v {
		b.rows = make([]float32, len(ids)*v)
	}
	rows := b.rows[:len(ids)*v]
	for i := range ids {
		copy(rows[i*v:], b.compute(ids[i:i+1], pos+i))
	}
	return rows, nil
}

// begin runs the hook, checks a step, counts it and returns with b.mu
// held (only when it returns nil).
func (b *Backend) begin(ctx context.Context, ids []int32, pos int) error {
	if b.Hook != nil {
		if err := b.Hook(ctx, ids, pos); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	info := b.Info()
	var err error
	switch {
	case b.stats.Closed:
		err = errors.New("enginetest: backend is closed")
	case len(ids) == 0:
		err = errors.New("enginetest: forward of no ids")
	case pos < 0 || pos > len(b.cache):
		err = fmt.Errorf("enginetest: forward at position %d with %d cached", pos, len(b.cache))
	case pos+len(ids) > info.ContextLength:
		err = fmt.Errorf("enginetest: positions up to %d exceed context length %d", pos+len(ids), info.ContextLength)
	}
	if err != nil {
		b.mu.Unlock()
		return err
	}
	b.stats.Forwards++
	b.stats.Positions += len(ids)
	b.stats.LastChunk = len(ids)
	b.stats.MaxChunk = max(b.stats.MaxChunk, len(ids))
	b.burn(len(ids))
	return nil
}

// compute caches ids at pos and returns the logits after the last of
// them; b.mu is held.
func (b *Backend) compute(ids []int32, pos int) []float32 {
	info := b.Info()
	step := 0
	if len(ids) == 1 && pos > 0 && ids[0] == b.expAt[pos-1] {
		step = b.stepAt[pos-1] + 1
	}
	b.cache = append(b.cache[:pos], ids...)
	b.stepAt, b.expAt = b.stepAt[:pos], b.expAt[:pos]
	for range len(ids) - 1 {
		b.stepAt, b.expAt = append(b.stepAt, -1), append(b.expAt, -1)
	}
	if len(b.logits) != info.VocabSize {
		b.logits = make([]float32, info.VocabSize)
	}
	var next int32
	if b.Logits != nil {
		b.Logits(b.logits, b.cache, step)
		next = argmax(b.logits)
	} else {
		next = info.EOS[0]
		if step < len(b.Reply) {
			next = b.Reply[step]
		}
		clear(b.logits)
		b.logits[next] = 30
	}
	b.stepAt, b.expAt = append(b.stepAt, step), append(b.expAt, next)
	return b.logits
}

// Close marks the backend closed.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Closed = true
	return nil
}

// Stats returns the counters so far.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Cached returns a copy of the ids in the backend's cache.
func (b *Backend) Cached() []int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int32(nil), b.cache...)
}

func (b *Backend) burn(positions int) {
	if b.WorkPerPosition <= 0 {
		return
	}
	if b.scratch == nil {
		b.scratch = make([]float32, 256)
		for i := range b.scratch {
			b.scratch[i] = float32(i) * 1e-3
		}
	}
	acc := float32(0)
	for p := 0; p < positions; p++ {
		for i := 0; i < b.WorkPerPosition; i++ {
			acc = acc*0.999 + b.scratch[i&255]
		}
	}
	b.scratch[0] = acc * 1e-30 // keep the work observable
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}
