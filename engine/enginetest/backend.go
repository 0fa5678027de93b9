package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// Speculation is on (ModelInfo.Speculation) unless ModelInfo sets it.
//
// With MaxBatch of 2 or more it is an engine.Batcher reporting
// BatchContinuous: Admit copies the Forward cache into a slot, and Decode
// computes each slot's row exactly as a one-token Forward on that slot's
// own ids would, so a sequence gets the same tokens batched and alone.
// (A final prefill chunk of one token that
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
	// MaxBatch, 2 or more, makes the backend report batched decoding
	// (ModelInfo.Batch BatchContinuous) with this many slots.
	MaxBatch int
	// DecodeHook, when set, runs at the start of every Decode; an error it
	// returns is returned by Decode (leaving every slot as it was).
	DecodeHook func(ctx context.Context, slots []int, ids []int32) error

	mu sync.Mutex
	track
	logits  []float32
	rows    []float32
	slots   []track
	stats   Stats
	scratch []float32
}

// track is one sequence's cached ids. stepAt and expAt hold, per cached
// position, the decode steps since the prefill and the id predicted after
// it (-1 inside a prefill).
type track struct {
	cache  []int32
	stepAt []int
	expAt  []int32
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
	// Admits, Decodes and Drops count those Batcher calls; MaxDecodeBatch
	// is the most slots one Decode ran, DecodeSlots the slots all of them
	// ran.
	Admits, Decodes, Drops, MaxDecodeBatch, DecodeSlots int
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
	if b.MaxBatch >= 2 && info.Batch == "" {
		info.Batch, info.MaxBatch = engine.BatchContinuous, b.MaxBatch
		info.BatchReason = "the scripted backend computes each slot's row alone"
	}
	if info.Speculation == "" {
		info.Speculation, info.SpeculationReason = engine.SpeculationPromptLookup, "the scripted backend verifies by running its tokens one by one"
	}
	return info
}

// dims are the vocabulary size, context length and first EOS id Info
// reports, without Info's allocations: the steps use them.
type dims struct {
	VocabSize, ContextLength int
	EOS                      int32
}

func (b *Backend) dims() dims {
	d := dims{VocabSize: b.ModelInfo.VocabSize, ContextLength: b.ModelInfo.ContextLength, EOS: EOS}
	if d.VocabSize == 0 {
		d.VocabSize = ByteVocab
	}
	if d.ContextLength == 0 {
		d.ContextLength = 4096
	}
	if len(b.ModelInfo.EOS) > 0 {
		d.EOS = b.ModelInfo.EOS[0]
	}
	return d
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
	if n > b.dims().ContextLength {
		return fmt.Errorf("enginetest: reserve %d positions beyond context length %d", n, b.dims().ContextLength)
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
	v := b.dims().VocabSize
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
	info := b.dims()
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
	info := b.dims()
	if len(b.logits) != info.VocabSize {
		b.logits = make([]float32, info.VocabSize)
	}
	b.computeOn(&b.track, ids, pos, b.logits)
	return b.logits
}

// computeOn caches ids at pos in t and writes the logits after the last
// of them to dst; b.mu is held.
func (b *Backend) computeOn(t *track, ids []int32, pos int, dst []float32) {
	info := b.dims()
	step := 0
	if len(ids) == 1 && pos > 0 && ids[0] == t.expAt[pos-1] {
		step = t.stepAt[pos-1] + 1
	}
	t.cache = append(t.cache[:pos], ids...)
	t.stepAt, t.expAt = t.stepAt[:pos], t.expAt[:pos]
	for range len(ids) - 1 {
		t.stepAt, t.expAt = append(t.stepAt, -1), append(t.expAt, -1)
	}
	var next int32
	if b.Logits != nil {
		b.Logits(dst, t.cache, step)
		next = argmax(dst)
	} else {
		next = info.EOS
		if step < len(b.Reply) {
			next = b.Reply[step]
		}
		clear(dst)
		dst[next] = 30
	}
	t.stepAt, t.expAt = append(t.stepAt, step), append(t.expAt, next)
}

// Admit copies the Forward cache into slot.
func (b *Backend) Admit(slot int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.checkSlot(slot); err != nil {
		return err
	}
	t := &b.slots[slot]
	t.cache = append(t.cache[:0], b.cache...)
	t.stepAt = append(t.stepAt[:0], b.stepAt...)
	t.expAt = append(t.expAt[:0], b.expAt...)
	b.stats.Admits++
	return nil
}

// Decode runs ids[i] at the next position of slots[i], each as a
// one-token Forward on the slot's own cache, and returns the rows.
func (b *Backend) Decode(ctx context.Context, slots []int, ids []int32) ([]float32, error) {
	if b.DecodeHook != nil {
		if err := b.DecodeHook(ctx, slots, ids); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(slots) == 0 || len(slots) != len(ids) {
		return nil, fmt.Errorf("enginetest: decode of %d slots with %d ids", len(slots), len(ids))
	}
	info := b.dims()
	for i, slot := range slots {
		if err := b.checkSlot(slot); err != nil {
			return nil, err
		}
		if len(b.slots[slot].cache) == 0 {
			return nil, fmt.Errorf("enginetest: decode on empty slot %d", slot)
		}
		if len(b.slots[slot].cache)+1 > info.ContextLength {
			return nil, fmt.Errorf("enginetest: slot %d is full", slot)
		}
		if slices.Contains(slots[:i], slot) {
			return nil, fmt.Errorf("enginetest: slot %d twice in one decode", slot)
		}
	}
	v := info.VocabSize
	if cap(b.rows) < len(slots)*v {
		b.rows = make([]float32, len(slots)*v)
	}
	rows := b.rows[:len(slots)*v]
	for i, slot := range slots {
		t := &b.slots[slot]
		b.computeOn(t, ids[i:i+1], len(t.cache), rows[i*v:(i+1)*v])
	}
	b.burn(len(slots))
	b.stats.Decodes++
	b.stats.DecodeSlots += len(slots)
	b.stats.MaxDecodeBatch = max(b.stats.MaxDecodeBatch, len(slots))
	return rows, nil
}

// Drop forgets slot's positions.
func (b *Backend) Drop(slot int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if slot >= 0 && slot < len(b.slots) {
		t := &b.slots[slot]
		t.cache, t.stepAt, t.expAt = t.cache[:0], t.stepAt[:0], t.expAt[:0]
	}
	b.stats.Drops++
}

// checkSlot refuses a slot out of range or a backend that is closed or
// does not batch; b.mu is held.
func (b *Backend) checkSlot(slot int) error {
	switch {
	case b.stats.Closed:
		return errors.New("enginetest: backend is closed")
	case b.MaxBatch < 2:
		return errors.New("enginetest: batching is off (MaxBatch < 2)")
	case slot < 0 || slot >= b.MaxBatch:
		return fmt.Errorf("enginetest: slot %d outside [0, %d)", slot, b.MaxBatch)
	}
	if len(b.slots) < b.MaxBatch {
		b.slots = append(b.slots, make([]track, b.MaxBatch-len(b.slots))...)
	}
	return nil
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
