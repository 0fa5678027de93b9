//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/prism-local/prism/engine"
)

// The fast cache strategies rest on what a graph does inside, which its
// signature does not promise: the padded hand-over on a causal mask over
// cache indices that leaves masked padding weightless, the shared buffer
// on an attention op that writes the new positions in place. Before either
// is used, chooseCache proves it on the loaded graph: the same steps run on
// a scratch cache of the candidate and on one of the exact hand-over (the
// plain loop every graph with a KV cache supports), and the logits must
// agree. When they do not, the model runs on the exact hand-over and the
// load log and ModelInfo say why.

// proofChunks are the proof's steps: a prefill, a one-token step on a past
// the padded strategy pads and a two-token chunk on that past, seven
// positions in all. Each is a runtime step both ways, and at the 0.5B shape
// a step reads every weight, so the proof keeps to the two kinds of step a
// fast strategy changes (the one-token step is where a position-based mask
// breaks).
func proofChunks() []int { return []int{4, 1, 2} }

// proofLength is how many positions the proof runs.
func proofLength() int {
	n := 0
	for _, c := range proofChunks() {
		n += c
	}
	return n
}

// proofIDs are the proof's tokens: fixed, spread over the vocabulary, and
// valid for any vocabulary size (every id is below vocab).
func proofIDs(vocab, n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32((uint64(i)*2654435761 + 1) % uint64(vocab))
	}
	return ids
}

// Two measures compare the logits of a step. The relative error is
// max|a-b| / max|b|, the oracle tests' measure. The spread error is
// rms(a-b) / std(b): the relative error is diluted when one logit towers
// over the rest (a scripted model's +100), the spread error is not, and a
// rounding flip of a few entries barely moves it.
//
// The runs differ only in the order of floating-point sums over the keys:
// measured 0 to 1.1e-7 for both measures on float32 logits, and for
// float16 logits at most a rounding step of the largest logit (about 1e-3
// of it). A graph the strategy does not suit differs far more: for the
// position-based mask under the padded past 5e-2 relative error, and on a
// scripted model, whose relative error drops to 2.3e-3, still 1e-2 of the
// spread.
type proofBound struct{ rel, spread float64 }

// proofTolerance is the relative error bound of the oracle tests for
// float32 logits and twice the rounding step for float16 logits, and a
// spread error bound well above the rounding noise of either.
func proofTolerance(logits ort.TensorElementDataType) proofBound {
	if logits == ort.TensorElementDataTypeFloat16 {
		return proofBound{rel: 2e-3, spread: 1e-3}
	}
	return proofBound{rel: 1e-4, spread: 1e-4}
}

// proof is what proving a strategy found.
type proof struct {
	worst proofBound    // largest errors over the steps
	step  int           // the step that broke the tolerance, -1 when none
	took  time.Duration // the candidate's run
}

// candidateCache is the strategy the folder and the graph's signature
// allow, and why.
func (b *Backend) candidateCache() (string, string, error) {
	io := b.io
	switch {
	case len(io.states) > 0:
		if b.cfg.shareBuffer {
			return "", "", &GraphError{Graph: b.cfg.graphPath, Msg: "past_present_share_buffer with a hybrid decoder's convolution state is not supported"}
		}
		return KVExact, "a hybrid decoder (convolution states beside the KV cache) runs on the exact hand-over", nil
	case io.combined:
		if b.cfg.shareBuffer {
			return "", "", &GraphError{Graph: b.cfg.graphPath, Msg: "past_present_share_buffer with a combined key/value cache is not supported"}
		}
		return KVExact, "a combined key/value cache per layer (past_N) runs on the exact hand-over", nil
	case b.cfg.shareBuffer:
		if io.mask == "" {
			return "", "", &GraphError{Graph: b.cfg.graphPath, Msg: "past_present_share_buffer needs an attention_mask input to give the valid length"}
		}
		return KVSharedBuffer, "genai_config.json sets search.past_present_share_buffer", nil
	case b.cfg.layout == LayoutGenAI:
		// genai graphs without a shared buffer may read the mask as
		// lengths (GroupQueryAttention's seqlens_k), which padding inside
		// the past would break.
		return KVExact, "a genai graph without a shared buffer may read attention_mask as lengths", nil
	case io.positions == "":
		return KVExact, "the graph has no position_ids input, so it would take positions from the past's length", nil
	case io.mask == "":
		return KVExact, "the graph has no attention_mask input to mask padding with", nil
	case b.cfg.slidingWindow:
		return KVExact, "config.json declares a sliding window, counted in cache positions", nil
	}
	return KVPadded, "an optimum graph with position_ids and attention_mask and no sliding window", nil
}

func (b *Backend) newCache(kind string) kvCache {
	io := b.io
	shape := cacheShape{slots: len(io.pasts), kvHeads: io.kvHeads, headDim: io.headDim, dt: io.kvType}
	if io.combined {
		// Keys then values: [2, 1, kv_heads, n, head_dim] is laid out as
		// 2·kv_heads heads of n rows, which the exact hand-over keeps.
		shape.kvHeads, shape.combined = 2*io.kvHeads, true
		return newHandoverCache(shape)
	}
	switch kind {
	case KVSharedBuffer:
		return newSharedCache(shape, io.pastLen)
	case KVPadded:
		return newPaddedCache(shape, io.maskType)
	}
	return newHandoverCache(shape)
}

// chooseCache picks the cache strategy and proves the step shapes the
// engine will use: the candidate the folder and the signature allow,
// unless exact forces the exact hand-over, and only once the loaded graph
// has proven it. It sets b.kv, the strategy and the prefill mode in
// b.info, and logs a warning when a proof fails.
func (b *Backend) chooseCache(ctx context.Context, exact bool) error {
	kind, why, err := b.candidateCache()
	if err != nil {
		return err
	}
	if kind != KVExact && exact {
		kind, why = KVExact, "the exact hand-over was asked for (Options.ExactHandover)"
	}
	short := false
	if cl := b.info.ContextLength; cl > 0 && cl < proofLength() {
		short = true
		if kind != KVExact {
			kind, why = KVExact, fmt.Sprintf("the context (%d positions) is shorter than the proof of a faster strategy (%d)", cl, proofLength())
		}
	}
	if kind == KVExact && b.io.pastLen > 0 {
		// Every step would be refused: the exact hand-over's past grows.
		return &GraphError{Graph: b.cfg.graphPath, Msg: fmt.Sprintf(
			"its past inputs have a fixed length of %d positions (a static KV buffer), which only a shared buffer can feed (genai_config.json's search.past_present_share_buffer), but it would run on the exact hand-over: %s",
			b.io.pastLen, why)}
	}
	if short {
		b.setPrefill(stepProof{reason: fmt.Sprintf("not proven: the context (%d positions) is shorter than the proof (%d)", b.info.ContextLength, proofLength())})
		b.info.Speculation, b.info.SpeculationReason = engine.SpeculationOff, fmt.Sprintf("not proven: the context (%d positions) is shorter than the proof (%d)", b.info.ContextLength, proofLength())
		if b.maxBatch > 1 {
			b.serialBatch(fmt.Sprintf("not proven: the context (%d positions) is shorter than the proof (%d)", b.info.ContextLength, proofLength()))
		} else {
			b.serialBatch("batching not asked for (Options.MaxBatch is at most 1)")
		}
	} else {
		start := time.Now()
		if kind, why, err = b.proveAll(ctx, kind, why); err != nil {
			return err
		}
		if err := b.proveSpeculation(ctx, kind); err != nil {
			return err
		}
		if err := b.proveBatch(ctx, kind, b.maxBatch); err != nil {
			return err
		}
		b.proofTook = time.Since(start)
	}
	b.kv = b.newCache(kind)
	b.info.KVCache, b.info.KVCacheReason = kind, why
	return nil
}

// proveAll proves the step shapes on the exact hand-over and then the
// candidate kind against it, and returns the strategy kept and why. When
// the exact hand-over cannot run, a shared buffer proves its step shapes
// on itself and is kept unverified against the exact hand-over; any other
// kind is an error.
func (b *Backend) proveAll(ctx context.Context, kind, why string) (string, string, error) {
	ref, err := b.proveSteps(ctx, KVExact)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", "", cerr
		}
		if kind != KVSharedBuffer {
			if kind == KVExact {
				return "", "", &GraphError{Graph: b.cfg.graphPath, Msg: "the proof of its steps at load failed", Err: err}
			}
			return "", "", &GraphError{Graph: b.cfg.graphPath, Msg: "the exact present-to-past hand-over cannot run on it", Err: err}
		}
		own, oerr := b.proveSteps(ctx, kind)
		if oerr != nil {
			if cerr := ctx.Err(); cerr != nil {
				return "", "", cerr
			}
			return "", "", &GraphError{Graph: b.cfg.graphPath, Msg: "the proof of its steps at load failed on the shared buffer", Err: oerr}
		}
		b.log.Warn("KV cache strategy not proven: the exact hand-over it is compared with cannot run on this graph",
			"model", b.info.ID, "strategy", kind, "err", err)
		b.setPrefill(own)
		return kind, why + "; not proven on this graph: the exact hand-over cannot run on it (" + err.Error() + ")", nil
	}
	b.setPrefill(ref)
	if kind == KVExact {
		return kind, why, nil
	}
	chunks := proofChunks()
	if !ref.chunkOnPast {
		chunks = chunks[:2] // the engine takes no multi-token step on a past
	}
	p, err := b.prove(ctx, kind, chunks, ref.chunked)
	if err != nil {
		return "", "", err
	}
	if p.step >= 0 {
		tol := proofTolerance(b.io.logitsType)
		b.log.Warn("KV cache strategy failed its proof on this graph; using the exact hand-over",
			"model", b.info.ID, "strategy", kind, "step", p.step,
			"relative_error", p.worst.rel, "spread_error", p.worst.spread, "tolerance", fmt.Sprintf("%g, %g", tol.rel, tol.spread))
		return KVExact, fmt.Sprintf("%s failed its proof on this graph: step %d of the proof gave logits apart from the exact hand-over's by %.3g relative error and %.3g of their spread (tolerances %.3g and %.3g)",
			kind, p.step, p.worst.rel, p.worst.spread, tol.rel, tol.spread), nil
	}
	return kind, why + fmt.Sprintf("; proven on this graph (errors %.2g relative, %.2g of the spread; %s)", p.worst.rel, p.worst.spread, p.took.Round(time.Millisecond)), nil
}

// prove runs chunks on a scratch cache of kind and compares each step's
// logits with want, the exact hand-over's on the same steps. A step the
// candidate cannot run at all fails the proof. Nothing of the scratch run
// stays behind.
func (b *Backend) prove(ctx context.Context, kind string, chunks []int, want [][]float32) (proof, error) {
	start := time.Now()
	got, gotErr := b.proofRun(ctx, kind, chunks)
	if err := ctx.Err(); err != nil {
		return proof{}, err
	}
	p := proof{step: -1, took: time.Since(start)}
	if gotErr != nil {
		b.log.Warn("KV cache strategy cannot run on this graph", "model", b.info.ID, "strategy", kind, "err", gotErr)
		p.step, p.worst = len(got), proofBound{rel: math.Inf(1), spread: math.Inf(1)}
		return p, nil
	}
	tol := proofTolerance(b.io.logitsType)
	for i := range got {
		rel, spread := logitsErrors(got[i], want[i])
		p.worst = proofBound{rel: max(p.worst.rel, rel), spread: max(p.worst.spread, spread)}
		if !(rel <= tol.rel && spread <= tol.spread) { // NaN fails too
			p.step = i
			return p, nil
		}
	}
	return p, nil
}

// proofRun runs chunks, one Forward each from position 0, on a fresh
// scratch cache of kind and returns each step's logits, as far as the
// steps ran. It leaves the backend as it found it: no positions cached, no
// cache, no masks, nothing bound.
func (b *Backend) proofRun(ctx context.Context, kind string, chunks []int) (out [][]float32, err error) {
	total := 0
	for _, n := range chunks {
		total += n
	}
	err = b.onScratch(kind, total, func() error {
		ids := proofIDs(b.io.vocab, total)
		pos := 0
		for _, n := range chunks {
			logits, err := b.Forward(ctx, ids[pos:pos+n], pos)
			if err != nil {
				return err
			}
			out = append(out, slices.Clone(logits))
			pos += n
		}
		return nil
	})
	return out, err
}

// onScratch runs steps on a fresh scratch cache of kind reserved for total
// positions and then leaves the backend as it found it: no positions
// cached, no cache, no masks, nothing bound.
func (b *Backend) onScratch(kind string, total int, steps func() error) error {
	b.kv = b.newCache(kind)
	b.resetState()
	defer func() {
		b.resetState()
		b.binding.ClearBoundInputs()
		b.binding.ClearBoundOutputs()
		clear(b.boundIn)
		clear(b.boundOut)
		b.kv.close()
		b.kv = nil
		b.closeMasks()
		b.cached = 0
	}()
	if err := b.reserve(total); err != nil {
		return err
	}
	return steps()
}

// logitsErrors returns the relative error max|got-want| / max|want| and
// the spread error rms(got-want) / std(want).
func logitsErrors(got, want []float32) (rel, spread float64) {
	var diff, ref, sq, sum, sum2 float64
	for i, w := range want {
		d := float64(got[i]) - float64(w)
		diff = math.Max(diff, math.Abs(d))
		ref = math.Max(ref, math.Abs(float64(w)))
		sq += d * d
		sum += float64(w)
		sum2 += float64(w) * float64(w)
	}
	n := float64(len(want))
	rms := math.Sqrt(sq / n)
	std := math.Sqrt(math.Max(sum2/n-(sum/n)*(sum/n), 0))
	rel, spread = diff, rms
	if ref > 0 {
		rel = diff / ref
	}
	if std > 0 {
		spread = rms / std
	}
	return rel, spread
}

// resetState zeroes a hybrid decoder's states: no position cached.
func (b *Backend) resetState() {
	if b.st != nil {
		b.st.reset()
		b.tokens = b.tokens[:0]
	}
}
