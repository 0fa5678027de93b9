//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	ort "github.com/yalue/onnxruntime_go"
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

// proofChunks are the proof's steps: a prefill, decode steps on a past the
// padded strategy pads, a two-token chunk on that past and a last decode
// step, twelve positions in all.
func proofChunks() []int { return []int{6, 1, 1, 1, 2, 1} }

// proofIDs are the proof's tokens: fixed, spread over the vocabulary, and
// valid for any vocabulary size (every id is below vocab).
func proofIDs(vocab, n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32((uint64(i)*2654435761 + 1) % uint64(vocab))
	}
	return ids
}

// proofTolerance bounds the relative logits error (max|a-b| / max|b|)
// between the two ways. The runs differ only in the order of
// floating-point sums over the keys: measured 0 to 1.1e-7 for float32
// logits, and for float16 logits at most a rounding step of the largest
// logit (about 1e-3 of it). The bounds are the oracle tests' for float32
// and twice the rounding step for float16. A graph the strategy does not
// suit differs far more (5e-2 for the position-based mask under the padded
// past; 3e-3 even when a scripted model's +100 logit dwarfs the rest).
func proofTolerance(logits ort.TensorElementDataType) float64 {
	if logits == ort.TensorElementDataTypeFloat16 {
		return 2e-3
	}
	return 1e-4
}

// proof is what proving a strategy found.
type proof struct {
	worst float64       // largest relative logits error over the steps
	step  int           // the step that broke the tolerance, -1 when none
	took  time.Duration // both ways
	// unverified is why there was nothing to compare with: the exact
	// hand-over cannot run on the graph ("" when it ran).
	unverified string
}

// candidateCache is the strategy the folder and the graph's signature
// allow, and why.
func (b *Backend) candidateCache() (string, string, error) {
	io := b.io
	switch {
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
	shape := cacheShape{slots: 2 * len(io.pastKeys), kvHeads: io.kvHeads, headDim: io.headDim, dt: io.kvType}
	switch kind {
	case KVSharedBuffer:
		return newSharedCache(shape)
	case KVPadded:
		return newPaddedCache(shape, io.maskType)
	}
	return newHandoverCache(shape)
}

// chooseCache picks the cache strategy: the candidate the folder and the
// signature allow, unless exact forces the exact hand-over, and only once
// the loaded graph has proven it. It sets b.kv and the strategy in
// b.info, and logs a warning when a proof fails.
func (b *Backend) chooseCache(ctx context.Context, exact bool) error {
	kind, why, err := b.candidateCache()
	if err != nil {
		return err
	}
	if kind != KVExact && exact {
		kind, why = KVExact, "the exact hand-over was asked for (Options.ExactHandover)"
	}
	if kind != KVExact {
		p, err := b.prove(ctx, kind)
		switch {
		case err != nil:
			return err
		case p.unverified != "":
			b.log.Warn("KV cache strategy not proven: the exact hand-over it is compared with cannot run on this graph",
				"model", b.info.ID, "strategy", kind, "err", p.unverified)
			why += "; not proven on this graph: the exact hand-over cannot run on it (" + p.unverified + ")"
		case p.step >= 0:
			b.log.Warn("KV cache strategy failed its proof on this graph; using the exact hand-over",
				"model", b.info.ID, "strategy", kind, "step", p.step, "relative_error", p.worst, "tolerance", proofTolerance(b.io.logitsType))
			why = fmt.Sprintf("%s failed its proof on this graph: step %d of the proof gave logits %.3g apart from the exact hand-over's (tolerance %.3g)",
				kind, p.step, p.worst, proofTolerance(b.io.logitsType))
			kind = KVExact
		default:
			why += fmt.Sprintf("; proven on this graph (relative error %.2g, %s)", p.worst, p.took.Round(time.Millisecond))
		}
		b.proofTook = p.took
	}
	b.kv = b.newCache(kind)
	b.info.KVCache, b.info.KVCacheReason = kind, why
	return nil
}

// prove runs the proof's steps on a scratch cache of kind and on one of the
// exact hand-over and compares the logits step by step. A step the
// candidate cannot run at all fails the proof. When the exact hand-over
// cannot run, a shared buffer is kept unverified (the folder declares it,
// and onnxruntime-genai runs such graphs only that way), and a padded past
// is an error: it has nothing to fall back to. Nothing of the scratch runs
// stays behind.
func (b *Backend) prove(ctx context.Context, kind string) (proof, error) {
	start := time.Now()
	got, gotErr := b.proofRun(ctx, kind)
	if err := ctx.Err(); err != nil {
		return proof{}, err
	}
	want, err := b.proofRun(ctx, KVExact)
	switch {
	case err != nil && ctx.Err() != nil:
		return proof{}, ctx.Err()
	case err != nil && kind == KVSharedBuffer && gotErr == nil:
		return proof{step: -1, took: time.Since(start), unverified: err.Error()}, nil
	case err != nil:
		return proof{}, &GraphError{Graph: b.cfg.graphPath, Msg: fmt.Sprintf("the exact present-to-past hand-over cannot run on it: %v", err)}
	}
	p := proof{step: -1, took: time.Since(start)}
	if gotErr != nil {
		b.log.Warn("KV cache strategy cannot run on this graph", "model", b.info.ID, "strategy", kind, "err", gotErr)
		p.step, p.worst = len(got), math.Inf(1)
		return p, nil
	}
	tol := proofTolerance(b.io.logitsType)
	for i := range want {
		e := relErr(got[i], want[i])
		p.worst = max(p.worst, e)
		if e > tol || math.IsNaN(e) {
			p.step = i
			return p, nil
		}
	}
	return p, nil
}

// proofRun runs the proof's steps on a fresh scratch cache of kind and
// returns each step's logits. It leaves the backend as it found it: no
// positions cached, no cache, no masks, nothing bound.
func (b *Backend) proofRun(ctx context.Context, kind string) (out [][]float32, err error) {
	chunks := proofChunks()
	total := 0
	for _, n := range chunks {
		total += n
	}
	if cl := b.info.ContextLength; cl > 0 && total > cl {
		total = cl
	}
	b.kv = b.newCache(kind)
	defer func() {
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
		return nil, err
	}
	ids := proofIDs(b.io.vocab, total)
	pos := 0
	for _, n := range chunks {
		if pos+n > total {
			break
		}
		logits, err := b.Forward(ctx, ids[pos:pos+n], pos)
		if err != nil {
			return out, err
		}
		out = append(out, slices.Clone(logits))
		pos += n
	}
	return out, nil
}

// relErr is max|got-want| / max|want|, the oracle tests' measure.
func relErr(got, want []float32) float64 {
	var diff, ref float64
	for i := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(want[i])))
		ref = math.Max(ref, math.Abs(float64(want[i])))
	}
	if ref == 0 {
		return diff
	}
	return diff / ref
}
