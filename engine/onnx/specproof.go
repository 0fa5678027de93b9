//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"time"

	"github.com/prism-local/prism/engine"
)

// Speculative decoding (engine.Verifier) rests on two things a graph's
// signature does not promise: that a multi-token step's logits are right
// at every position, not only the last (a graph with logits_to_keep must
// honour a value above 1, and nothing may be added to every row that is
// right for the last one only), and that a step at a lower position after
// it rolls the cache back past the rejected positions (the shared buffer
// just forgets them, relying on the attention op to read no further than
// the mask's length and to write the next step where the mask ends). So
// at load, on a scratch cache of the strategy chosen, proveSpeculation
// runs the proof's 4-token prefill, a 3-token verify step on it and a
// one-token step back at position 5 with a token other than the one the
// verify step put there, and compares each verify row with the logits of
// the same prefix in the step proof's runs (or one whole-prompt step) and
// the rolled-back step with one whole-prompt step over the prefix it
// continues. The bounds are the step proof's.

// proveSpeculation decides whether the engine may verify drafts on this
// graph, with kind the cache strategy chosen, and records it in b.info.
func (b *Backend) proveSpeculation(ctx context.Context, kind string) error {
	ref := b.stepRef
	b.stepRef = nil
	off := func(reason string) error {
		b.info.Speculation, b.info.SpeculationReason = engine.SpeculationOff, reason
		return nil
	}
	switch {
	case len(b.io.states) > 0:
		return off("a hybrid decoder's states are restored from a snapshot and replayed to roll back, which would cost more than a draft saves")
	case b.info.Prefill != engine.PrefillChunked:
		return off("the graph takes no multi-token step on a past, which a verify step is")
	case len(ref) < 3:
		return off("the step proof's runs are missing")
	}
	start := time.Now()
	ids := proofIDs(b.io.vocab, proofLength())
	other := (ids[5] + 1) % int32(b.io.vocab)
	var rows [][]float32
	var back []float32
	err := b.onScratch(kind, proofLength(), func() error {
		if _, err := b.Forward(ctx, ids[:4], 0); err != nil {
			return fmt.Errorf("a 4-token prefill fails: %w", err)
		}
		all, err := b.verify(ctx, ids[4:7], 4)
		if err != nil {
			return fmt.Errorf("a 3-token verify step on a past of 4 positions fails: %w", err)
		}
		v := b.io.vocab
		if len(all) != 3*v {
			return fmt.Errorf("a 3-token verify step gave %d logits, want %d rows of %d", len(all), 3, v)
		}
		for i := range 3 {
			rows = append(rows, append([]float32(nil), all[i*v:(i+1)*v]...))
		}
		last, err := b.Forward(ctx, []int32{other}, 5)
		if err != nil {
			return fmt.Errorf("a one-token step at position 5 after a verify step to 7 fails: %w", err)
		}
		back = append([]float32(nil), last...)
		return nil
	})
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		b.log.Warn("speculative decoding off: the verify step cannot run on this graph", "model", b.info.ID, "err", err)
		return off(err.Error())
	}
	whole := func(prefix []int32) ([]float32, error) {
		var out []float32
		err := b.onScratch(kind, len(prefix), func() error {
			l, err := b.Forward(ctx, prefix, 0)
			out = append([]float32(nil), l...)
			return err
		})
		return out, err
	}
	row5, err := whole(ids[:6])
	if err != nil {
		return b.proofFailed(ctx, err)
	}
	backRef, err := whole(append(append([]int32(nil), ids[:5]...), other))
	if err != nil {
		return b.proofFailed(ctx, err)
	}
	tol := stepTolerance(b.io.logitsType)
	var worst proofBound
	checks := []struct {
		what      string
		got, want []float32
	}{
		{"row 1 of a 3-token verify step on a past of 4 positions", rows[0], ref[1]},
		{"row 2 of that verify step", rows[1], row5},
		{"row 3 of that verify step", rows[2], ref[2]},
		{"a one-token step at position 5 after the verify step (the cache rolled back)", back, backRef},
	}
	for _, c := range checks {
		rel, spread := logitsErrors(c.got, c.want)
		worst = proofBound{rel: max(worst.rel, rel), spread: max(worst.spread, spread)}
		if !(rel <= tol.rel && spread <= tol.spread) { // NaN fails too
			reason := fmt.Sprintf("%s gives logits apart from one whole-prompt step's by %.3g relative error and %.3g of their spread (tolerances %.3g and %.3g)",
				c.what, rel, spread, tol.rel, tol.spread)
			b.log.Warn("speculative decoding off: the verify step failed its proof on this graph", "model", b.info.ID, "detail", reason)
			return off(reason)
		}
	}
	b.info.Speculation = engine.SpeculationPromptLookup
	b.info.SpeculationReason = fmt.Sprintf("proven on this graph: a 3-token verify step gives every position the logits of one whole-prompt step, and a step back at a lower position rolls the cache back (errors %.2g relative, %.2g of the spread; %s)",
		worst.rel, worst.spread, time.Since(start).Round(time.Millisecond))
	return nil
}

// proofFailed turns a whole-prompt reference step that failed into the
// load's error: the step proof ran the same step shape, so this is the
// runtime failing, not the graph's form.
func (b *Backend) proofFailed(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return &GraphError{Graph: b.cfg.graphPath, Msg: "a whole-prompt step of the speculation proof failed", Err: err}
}
