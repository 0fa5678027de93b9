//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/prism-local/prism/engine"
)

// The engine runs three shapes of step: a prompt from position 0, a
// one-token decode step on a past, and a multi-token step on a non-empty
// past (a later prefill chunk, or the rest of a prompt after a reused
// prefix). Every graph takes the first; the others rest on how the graph
// builds its attention mask, which its signature does not show: the
// onnxruntime-genai model builder's MultiHeadAttention export, for one,
// rebuilds the mask as a square over the step's tokens and cannot expand
// it over a past. So at load proveSteps runs the proof's chunks (a
// prefill, a one-token step, a two-token step) on a scratch cache and
// compares each step after the first with one whole-prompt step over the
// same tokens on a fresh cache. A graph whose one-token step fails cannot
// decode and is refused (one whose one-token step only disagrees is kept,
// as every loop over it runs that step, with a warning); one whose
// multi-token step fails or disagrees
// runs every prompt in one step from position 0 (engine.PrefillWhole),
// reported in ModelInfo, the load log and the server's /health.

// stepTolerance bounds the errors between a chunked run and one
// whole-prompt step. Unlike the cache strategies' runs, the two differ in
// more than the order of sums: within a step a graph may attend over the
// new keys and values before they are rounded to the cache's type, and an
// int8-activation kernel quantizes per step. Measured on the generator's
// forms: at most 1.1e-7 for float32 caches, and for float16 ones up to 1e-3
// relative and 3e-3 of the spread (q4f16). A mask that breaks the chunk
// differs by far more (the attention of every new token changes).
func stepTolerance(logits ort.TensorElementDataType) proofBound {
	if logits == ort.TensorElementDataTypeFloat16 {
		return proofBound{rel: 1e-2, spread: 2e-2}
	}
	return proofBound{rel: 1e-3, spread: 1e-3}
}

// stepProof is what proving the step shapes found.
type stepProof struct {
	// chunked are the logits of the proof's chunks on the cache proven,
	// as far as they ran: the reference a faster cache strategy is
	// compared with.
	chunked [][]float32
	// chunkOnPast is set when a multi-token step on a non-empty past gave
	// the logits of one whole-prompt step.
	chunkOnPast bool
	reason      string
	// decodeNote says how a one-token step disagreed with a whole-prompt
	// step beyond the tolerance ("" when it agreed).
	decodeNote string
}

// proveSteps proves the step shapes on scratch caches of kind. An error
// means the graph cannot run a prefill or a decode step on kind; a decode
// step that disagrees and a multi-token step on a past that fails or
// disagrees are outcomes, not errors.
func (b *Backend) proveSteps(ctx context.Context, kind string) (stepProof, error) {
	start := time.Now()
	chunks := proofChunks()
	chunked, cerr := b.proofRun(ctx, kind, chunks)
	if err := ctx.Err(); err != nil {
		return stepProof{}, err
	}
	if len(chunked) == 0 {
		return stepProof{}, fmt.Errorf("a %d-token prefill fails: %w", chunks[0], cerr)
	}
	if len(chunked) == 1 {
		return stepProof{}, fmt.Errorf("a one-token step on a past of %d positions fails: %w", chunks[0], cerr)
	}
	tol := stepTolerance(b.io.logitsType)
	// whole runs the first n proof ids as one step and compares its logits
	// with those of the chunked run's step i.
	whole := func(i, n int) (proofBound, error) {
		w, err := b.proofRun(ctx, kind, []int{n})
		if err != nil {
			return proofBound{}, fmt.Errorf("a %d-token prefill fails: %w", n, err)
		}
		rel, spread := logitsErrors(chunked[i], w[0])
		return proofBound{rel: rel, spread: spread}, nil
	}
	within := func(e proofBound) bool { return e.rel <= tol.rel && e.spread <= tol.spread } // NaN fails
	decodeErr, err := whole(1, chunks[0]+chunks[1])
	if err != nil {
		return stepProof{}, err
	}
	p := stepProof{chunked: chunked}
	if !within(decodeErr) {
		// A decode step is what every loop over the graph runs, so the
		// graph is kept, and the disagreement is said where it is seen.
		p.decodeNote = fmt.Sprintf("a one-token step on a past of %d positions gives logits apart from one whole-prompt step's by %.3g relative error and %.3g of their spread (tolerances %.3g and %.3g)",
			chunks[0], decodeErr.rel, decodeErr.spread, tol.rel, tol.spread)
		b.log.Warn("the graph's decode step disagrees with a whole-prompt step", "model", b.info.ID, "detail", p.decodeNote)
	}
	past, n := chunks[0]+chunks[1], chunks[2]
	if cerr != nil {
		p.reason = fmt.Sprintf("a %d-token step on a past of %d positions fails: %v", n, past, cerr)
		return p, nil
	}
	chunkErr, err := whole(2, past+n)
	if err != nil {
		return stepProof{}, err
	}
	if !within(chunkErr) {
		p.reason = fmt.Sprintf("a %d-token step on a past of %d positions gives logits apart from one whole-prompt step's by %.3g relative error and %.3g of their spread (tolerances %.3g and %.3g)",
			n, past, chunkErr.rel, chunkErr.spread, tol.rel, tol.spread)
		return p, nil
	}
	p.chunkOnPast = true
	steps, worst := fmt.Sprintf("one-token and %d-token steps on a past give", n), chunkErr
	if p.decodeNote == "" {
		worst = proofBound{rel: max(decodeErr.rel, chunkErr.rel), spread: max(decodeErr.spread, chunkErr.spread)}
	} else {
		// Only the multi-token step is proven; decodeNote says the rest.
		steps = fmt.Sprintf("a %d-token step on a past gives", n)
	}
	p.reason = fmt.Sprintf("proven on this graph: %s the logits of one whole-prompt step (errors %.2g relative, %.2g of the spread; %s)",
		steps, worst.rel, worst.spread, time.Since(start).Round(time.Millisecond))
	return p, nil
}

// setPrefill records the prefill mode the step proof allows, and warns
// when prompts must run whole.
func (b *Backend) setPrefill(p stepProof) {
	b.stepRef = p.chunked
	b.info.Prefill, b.info.PrefillReason = engine.PrefillChunked, p.reason
	if p.decodeNote != "" {
		b.info.PrefillReason += "; " + p.decodeNote
	}
	if p.chunkOnPast {
		return
	}
	b.info.Prefill = engine.PrefillWhole
	b.log.Warn("the graph takes no multi-token step on a past: every prompt runs in one step from position 0 and no cached prefix is reused",
		"model", b.info.ID, "reason", p.reason)
}
