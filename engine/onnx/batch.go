//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"slices"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/prism-local/prism/engine"
)

// Batched decoding (engine.Batcher) rests on what a graph does with a
// batch of rows of different lengths, which its signature does not
// promise: that it attends to each row's own positions only, takes each
// row's position from position_ids (or from its own mask), and leaves
// masked columns weightless. So at load, when Options.MaxBatch asks for
// more than one sequence, proveBatch prefills two probe sequences of
// different lengths alone, admits them to two slots and runs two batched
// decode steps, and each row's logits must be those the same sequence
// gets alone, by the step proof's bounds and with the same argmax.

// batchProbe are the probe sequences' prompt lengths; each then decodes
// batchProbeSteps tokens.
var batchProbe = [2]int{3, 5}

const batchProbeSteps = 2

// batchRefusal says why the graph takes no batched decode step whatever
// a proof would find, "" when it may.
func (b *Backend) batchRefusal(kind string) string {
	io := b.io
	switch {
	case len(io.states) > 0:
		return "a hybrid decoder's convolution states are kept for one sequence"
	case io.combined:
		return "a combined key/value cache per layer (past_N) is not batched"
	case kind == KVSharedBuffer:
		return "the shared buffer (GroupQueryAttention with seqlens) keeps one sequence per buffer"
	case io.pastLen > 0:
		return fmt.Sprintf("the graph fixes its past at %d positions", io.pastLen)
	case io.mask == "":
		return "the graph has no attention_mask input to mask a shorter row's leading columns with"
	case io.batchOne != "":
		return fmt.Sprintf("the graph declares a batch of 1 (%s)", io.batchOne)
	case b.cfg.layout == LayoutGenAI:
		return "a genai graph may read attention_mask as lengths, which a left-padded row breaks"
	case b.cfg.slidingWindow:
		return "config.json declares a sliding window, counted in cache positions"
	}
	return ""
}

// serialBatch records that the engine runs one sequence at a time.
func (b *Backend) serialBatch(reason string) {
	b.batch = nil
	b.info.Batch, b.info.BatchReason, b.info.MaxBatch = engine.BatchSerial, reason, 1
}

// proveBatch decides whether the engine may decode up to maxBatch
// sequences in one step, with kind the Forward cache's strategy, and
// records it in b.info; it leaves the backend with nothing cached.
func (b *Backend) proveBatch(ctx context.Context, kind string, maxBatch int) error {
	if maxBatch <= 1 {
		b.serialBatch("batching not asked for (Options.MaxBatch is at most 1)")
		return nil
	}
	if why := b.batchRefusal(kind); why != "" {
		b.log.Info("batched decoding off", "model", b.info.ID, "reason", why)
		b.serialBatch(why)
		return nil
	}
	start := time.Now()
	seqs, total := b.batchProbeIDs()
	want := make([][]float32, 0, 2*batchProbeSteps)
	err := b.onScratch(kind, total, func() error {
		for k, seq := range seqs {
			n := batchProbe[k]
			if _, err := b.Forward(ctx, seq[:n], 0); err != nil {
				return err
			}
			for s := range batchProbeSteps {
				l, err := b.Forward(ctx, seq[n+s:n+s+1], n+s)
				if err != nil {
					return err
				}
				want = append(want, slices.Clone(l))
			}
		}
		return nil
	})
	if err != nil {
		return b.proofFailedBatch(ctx, err)
	}
	got, err := b.batchProbeRun(ctx, kind, seqs, total, maxBatch)
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		reason := "a batched decode step cannot run on this graph: " + err.Error()
		b.log.Warn("batched decoding off", "model", b.info.ID, "reason", reason)
		b.serialBatch(reason)
		return nil
	}
	tol := stepTolerance(b.io.logitsType)
	var worst proofBound
	for k := range seqs {
		for s := range batchProbeSteps {
			g, w := got[s*2+k], want[k*batchProbeSteps+s]
			rel, spread := logitsErrors(g, w)
			worst = proofBound{rel: max(worst.rel, rel), spread: max(worst.spread, spread)}
			if !(rel <= tol.rel && spread <= tol.spread) || bestID(g) != bestID(w) { // NaN fails too
				reason := fmt.Sprintf("the batched proof failed on this graph: batched decode step %d gives the sequence of %d positions logits apart from its own by %.3g relative error and %.3g of their spread (tolerances %.3g and %.3g; argmax %d, alone %d)",
					s+1, batchProbe[k], rel, spread, tol.rel, tol.spread, bestID(g), bestID(w))
				b.log.Warn("batched decoding off", "model", b.info.ID, "reason", reason)
				b.serialBatch(reason)
				return nil
			}
		}
	}
	b.info.Batch, b.info.MaxBatch = engine.BatchContinuous, maxBatch
	b.info.BatchReason = fmt.Sprintf("proven on this graph: %d batched decode steps of sequences of %d and %d positions give each the logits it gets alone (errors %.2g relative, %.2g of the spread; %s)",
		batchProbeSteps, batchProbe[0], batchProbe[1], worst.rel, worst.spread, time.Since(start).Round(time.Millisecond))
	b.batch = b.newBatchCache(maxBatch)
	return nil
}

// batchProbeIDs returns the two probe sequences (prompt and decoded ids)
// and the most positions either runs.
func (b *Backend) batchProbeIDs() ([2][]int32, int) {
	a, c := batchProbe[0]+batchProbeSteps, batchProbe[1]+batchProbeSteps
	ids := proofIDs(b.io.vocab, a+c)
	return [2][]int32{ids[:a], ids[a:]}, max(a, c)
}

// batchProbeRun prefills each probe sequence alone, admits the shorter to
// slot 1 and the longer to slot 0, and runs the batched decode steps; it
// returns each step's rows in the order of the sequences.
func (b *Backend) batchProbeRun(ctx context.Context, kind string, seqs [2][]int32, total, maxBatch int) ([][]float32, error) {
	var got [][]float32
	b.batch = b.newBatchCache(maxBatch)
	defer func() {
		b.batch.close()
		b.batch = nil
	}()
	err := b.onScratch(kind, total, func() error {
		for k, slot := range [2]int{1, 0} {
			if _, err := b.Forward(ctx, seqs[k][:batchProbe[k]], 0); err != nil {
				return err
			}
			if err := b.admit(slot); err != nil {
				return err
			}
		}
		v := b.io.vocab
		for s := range batchProbeSteps {
			// The slots in both orders: rows are found by slot.
			slots := []int{1, 0}
			ids := []int32{seqs[0][batchProbe[0]+s], seqs[1][batchProbe[1]+s]}
			if s%2 == 1 {
				slots, ids = []int{0, 1}, []int32{ids[1], ids[0]}
			}
			out, err := b.decode(ctx, slots, ids)
			if err != nil {
				return err
			}
			for k := range 2 {
				i := k
				if s%2 == 1 {
					i = 1 - k
				}
				got = append(got, slices.Clone(out[i*v:(i+1)*v]))
			}
		}
		return nil
	})
	return got, err
}

// proofFailedBatch turns a one-sequence reference step that failed into
// the load's error: the step proof ran the same step shapes.
func (b *Backend) proofFailedBatch(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return &GraphError{Graph: b.cfg.graphPath, Msg: "a one-sequence step of the batch proof failed", Err: err}
}

func (b *Backend) newBatchCache(maxBatch int) *batchCache {
	io := b.io
	return newBatchCache(cacheShape{slots: len(io.pasts), kvHeads: io.kvHeads, headDim: io.headDim, dt: io.kvType}, maxBatch)
}

// batchError is the StepError of a batched step or an admission.
func (b *Backend) batchError(pos, n int, msg string, err error) error {
	return &StepError{Graph: b.cfg.graphPath, Pos: pos, Tokens: n, Msg: msg, Err: err}
}

// Admit moves the positions Forward has cached into slot, replacing what
// the slot held (engine.Batcher). The Forward cache keeps them. A failure
// is a *StepError and leaves every slot as it was.
func (b *Backend) Admit(slot int) error {
	if b.closed {
		return engine.ErrClosed
	}
	if b.batch == nil {
		return b.batchError(b.cached, 0, "batched decoding is off on this graph: "+b.info.BatchReason, nil)
	}
	return b.admit(slot)
}

func (b *Backend) admit(slot int) error {
	c := b.batch
	if slot < 0 || slot >= c.maxRows {
		return b.batchError(b.cached, 0, fmt.Sprintf("admit to slot %d: the batch has slots 0-%d", slot, c.maxRows-1), nil)
	}
	if b.cached == 0 {
		return b.batchError(0, 0, fmt.Sprintf("admit to slot %d: no positions are cached", slot), nil)
	}
	src, ok := b.kv.(positionSource)
	if !ok {
		return b.batchError(b.cached, 0, fmt.Sprintf("admit to slot %d: the %s cache cannot be copied into a batch", slot, b.cacheKind()), nil)
	}
	bufs := make([][]byte, len(b.io.pasts))
	stride := 0
	for i := range bufs {
		bufs[i], stride = src.positions(i)
	}
	if err := c.admit(slot, b.cached, bufs, stride); err != nil {
		return b.batchError(b.cached, 0, fmt.Sprintf("admit %d positions to slot %d", b.cached, slot), err)
	}
	return nil
}

// Drop frees slot; its positions are forgotten (engine.Batcher).
func (b *Backend) Drop(slot int) {
	if b.closed || b.batch == nil {
		return
	}
	b.batch.drop(slot)
}

// Decode runs ids[i] at the next position of slots[i], every slot in one
// runtime step, and returns the logits of each, row after row, valid until
// the next call (engine.Batcher). Cancelling ctx abandons the step. A
// failure is a *StepError (or ctx's error) and leaves every slot as it
// was.
func (b *Backend) Decode(ctx context.Context, slots []int, ids []int32) ([]float32, error) {
	if b.closed {
		return nil, engine.ErrClosed
	}
	if b.batch == nil {
		return nil, b.batchError(0, len(ids), "batched decoding is off on this graph: "+b.info.BatchReason, nil)
	}
	return b.decode(ctx, slots, ids)
}

// decodeStep holds a batched step's tensors, destroyed after it.
type decodeStep struct {
	ids, pos, mask, logits *ort.CustomDataTensor
	past, present          []*ort.CustomDataTensor
}

func (s *decodeStep) close() {
	destroy(s.ids)
	destroy(s.pos)
	destroy(s.mask)
	destroy(s.logits)
	destroyAll(s.past)
	destroyAll(s.present)
}

func (b *Backend) decode(ctx context.Context, slots []int, ids []int32) ([]float32, error) {
	c := b.batch
	ran, err := b.checkDecode(slots, ids)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pos := c.rows[c.slotRow[slots[0]]].next
	fail := func(msg string, err error) ([]float32, error) {
		return nil, b.batchError(pos, 1, fmt.Sprintf("batched decode step of %d sequences: %s", len(slots), msg), err)
	}
	if err := c.grow(len(c.rows), c.length); err != nil {
		return fail("grow the batch's cache", err)
	}
	step, err := b.decodeInputs(slots, ids, ran)
	if err != nil {
		return fail("prepare the inputs", err)
	}
	defer step.close()
	ins := []ort.Value{step.ids}
	if b.io.mask != "" {
		ins = append(ins, step.mask)
	}
	if b.io.positions != "" {
		ins = append(ins, step.pos)
	}
	if b.keep != nil {
		ins = append(ins, b.keep)
	}
	if b.io.useCache != "" {
		ins = append(ins, b.useCache[1])
	}
	outs := []ort.Value{step.logits}
	for i := range step.past {
		ins = append(ins, step.past[i])
		outs = append(outs, step.present[i])
	}
	if err := b.runCancellable(ctx, ins, outs); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fail("onnx runtime", err)
	}
	c.commit(ran)
	return b.batchLogits(slots), nil
}

// checkDecode checks a batched step and returns which rows it runs.
func (b *Backend) checkDecode(slots []int, ids []int32) ([]bool, error) {
	c := b.batch
	bad := func(msg string, err error) ([]bool, error) {
		return nil, b.batchError(0, len(ids), "batched decode step: "+msg, err)
	}
	if len(slots) == 0 || len(slots) != len(ids) {
		return bad(fmt.Sprintf("%d slots for %d ids; want as many, at least one", len(slots), len(ids)), nil)
	}
	ran := make([]bool, len(c.rows))
	for _, s := range slots {
		if s < 0 || s >= c.maxRows || c.slotRow[s] < 0 {
			return bad(fmt.Sprintf("slot %d holds no sequence", s), nil)
		}
		r := c.slotRow[s]
		if ran[r] {
			return bad(fmt.Sprintf("slot %d given twice", s), nil)
		}
		ran[r] = true
		if cl := b.info.ContextLength; cl > 0 && c.rows[r].next+1 > cl {
			return bad(fmt.Sprintf("slot %d is full", s), &engine.ContextLengthError{PromptTokens: c.rows[r].next + 1, ContextLength: cl})
		}
	}
	return ran, nil
}

// decodeInputs makes the step's tensors: ids and position_ids [B, 1], the
// mask [B, L+1] (zeros before each row's span and at its holes), the
// logits [B, 1, vocab] and the cache views. A row that sits out the step
// takes id 0 at a masked column.
func (b *Backend) decodeInputs(slots []int, ids []int32, ran []bool) (*decodeStep, error) {
	c := b.batch
	n, width := len(c.rows), c.length+1
	idIn := intInput{dt: b.io.idsType, buf: make([]byte, n*elemSize(b.io.idsType))}
	posIn := intInput{dt: b.io.posType, buf: make([]byte, n*max(elemSize(b.io.posType), 1))}
	maskIn := intInput{dt: b.io.maskType, buf: make([]byte, n*width*elemSize(b.io.maskType))}
	for i, s := range slots {
		idIn.set(c.slotRow[s], int64(ids[i]))
	}
	for r, br := range c.rows {
		if b.io.positions != "" {
			posIn.set(r, int64(br.next))
		}
		lead := c.length - len(br.cols)
		for k, v := range br.cols {
			maskIn.set(r*width+lead+k, int64(v))
		}
		if ran[r] {
			maskIn.set(r*width+c.length, 1)
		}
	}
	if len(b.batchOut) < n*b.io.vocab*elemSize(b.io.logitsType) {
		b.batchOut = make([]byte, n*b.io.vocab*elemSize(b.io.logitsType))
	}
	st := &decodeStep{}
	var err error
	fail := func(e error) (*decodeStep, error) {
		st.close()
		return nil, e
	}
	if st.ids, err = newTensor(idIn.buf, idIn.dt, int64(n), 1); err != nil {
		return fail(err)
	}
	if b.io.positions != "" {
		if st.pos, err = newTensor(posIn.buf, posIn.dt, int64(n), 1); err != nil {
			return fail(err)
		}
	}
	if st.mask, err = newTensor(maskIn.buf, maskIn.dt, int64(n), int64(width)); err != nil {
		return fail(err)
	}
	if st.logits, err = newTensor(b.batchOut, b.io.logitsType, int64(n), 1, int64(b.io.vocab)); err != nil {
		return fail(err)
	}
	if st.past, st.present, err = c.views(); err != nil {
		return fail(err)
	}
	return st, nil
}

// batchLogits returns the rows of slots, in their order, as float32.
func (b *Backend) batchLogits(slots []int) []float32 {
	v := b.io.vocab
	if cap(b.batchRows) < len(slots)*v {
		b.batchRows = make([]float32, len(slots)*v)
	}
	out := b.batchRows[:len(slots)*v]
	for i, s := range slots {
		r := b.batch.slotRow[s]
		o := logitsOutput{dt: b.io.logitsType, vocab: v, buf: b.batchOut[r*v*elemSize(b.io.logitsType):], rows: 1}
		o.last(out[i*v:(i+1)*v], false)
	}
	return out
}

// bestID is the index of the largest of logits (the first on a tie).
func bestID(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}
