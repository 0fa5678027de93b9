//go:build cgo

package onnx

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
)

// batchPrompt is a deterministic prompt of n ids for sequence k.
func batchPrompt(k, n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(1 + (i*37+k*53)%250)
	}
	return ids
}

// alone is what a sequence gets decoded greedily with Forward alone: its
// tokens, and the logits after each.
type alone struct {
	tokens []int32
	logits [][]float32
}

// aloneGreedy decodes steps tokens greedily after prompt with Forward
// alone.
func aloneGreedy(t *testing.T, b *Backend, prompt []int32, steps int) alone {
	t.Helper()
	ctx := context.Background()
	logits, err := b.Forward(ctx, prompt, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out alone
	pos := len(prompt)
	for range steps {
		id := argmaxOf(logits)
		out.tokens = append(out.tokens, id)
		if logits, err = b.Forward(ctx, []int32{id}, pos); err != nil {
			t.Fatal(err)
		}
		out.logits = append(out.logits, append([]float32(nil), logits...))
		pos++
	}
	return out
}

// batchSeq is a sequence decoded in a batch.
type batchSeq struct {
	slot int
	last []float32 // its newest logits
	got  []int32
	want alone
}

// admitSeq prefills prompt alone and admits it to slot.
func admitSeq(t *testing.T, b *Backend, slot int, prompt []int32, want alone) *batchSeq {
	t.Helper()
	logits, err := b.Forward(context.Background(), prompt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Admit(slot); err != nil {
		t.Fatalf("admit to slot %d: %v", slot, err)
	}
	return &batchSeq{slot: slot, last: append([]float32(nil), logits...), want: want}
}

// stepBatch runs one greedy Decode over seqs.
func stepBatch(t *testing.T, b *Backend, seqs []*batchSeq) {
	t.Helper()
	slots := make([]int, len(seqs))
	ids := make([]int32, len(seqs))
	for i, s := range seqs {
		slots[i], ids[i] = s.slot, argmaxOf(s.last)
		s.got = append(s.got, ids[i])
	}
	out, err := b.Decode(context.Background(), slots, ids)
	if err != nil {
		t.Fatalf("decode slots %v: %v", slots, err)
	}
	v := b.Info().VocabSize
	if len(out) != len(seqs)*v {
		t.Fatalf("decode of %d slots gave %d logits, want %d", len(seqs), len(out), len(seqs)*v)
	}
	tol := stepTolerance(b.io.logitsType)
	for i, s := range seqs {
		s.last = append(s.last[:0], out[i*v:(i+1)*v]...)
		if k := len(s.got) - 1; k < len(s.want.logits) {
			if rel, spread := logitsErrors(s.last, s.want.logits[k]); !(rel <= tol.rel && spread <= tol.spread) {
				t.Fatalf("slot %d, token %d: logits apart from alone by %.3g relative, %.3g of the spread", s.slot, k, rel, spread)
			}
		}
	}
}

func checkTokens(t *testing.T, what string, got, want []int32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tokens, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: token %d is %d, alone %d (got %v, want %v)", what, i, got[i], want[i], got, want)
		}
	}
}

func openBatched(t *testing.T, name string, maxBatch int) *Backend {
	t.Helper()
	return openBatchedWith(t, name, Options{MaxBatch: maxBatch})
}

func openBatchedWith(t *testing.T, name string, opts Options) *Backend {
	t.Helper()
	cfg, ok := variants()[name]
	if !ok {
		t.Fatalf("no variant %q", name)
	}
	return openModel(t, modelDir(t, "batch-"+name, cfg), opts)
}

// TestBatchDecodeMatchesAlone decodes B sequences of different prompt
// lengths greedily in batched steps, and each must get exactly the tokens
// it gets alone.
func TestBatchDecodeMatchesAlone(t *testing.T) {
	const steps = 6
	cases := []struct {
		name, variant string
		exact         bool // the Forward cache on the exact hand-over
	}{
		{"optimum-fp32", "optimum-fp32", false},
		{"optimum-fp32-exact", "optimum-fp32", true},
		{"optimum-merged", "optimum-merged", false},
		{"optimum-logits-to-keep", "optimum-logits-to-keep", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := openBatchedWith(t, tc.variant, Options{MaxBatch: 8, ExactHandover: tc.exact})
			info := b.Info()
			if info.Batch != engine.BatchContinuous || info.MaxBatch != 8 {
				t.Fatalf("batch %q max %d (%s), want continuous 8", info.Batch, info.MaxBatch, info.BatchReason)
			}
			for _, n := range []int{1, 2, 4, 8} {
				prompts := make([][]int32, n)
				want := make([]alone, n)
				for k := range prompts {
					prompts[k] = batchPrompt(k, 2+3*k)
					want[k] = aloneGreedy(t, b, prompts[k], steps)
				}
				seqs := make([]*batchSeq, n)
				for k := range seqs {
					seqs[k] = admitSeq(t, b, (k*3)%8, prompts[k], want[k])
				}
				for range steps {
					stepBatch(t, b, seqs)
				}
				for k, s := range seqs {
					checkTokens(t, "sequence "+string(rune('a'+k)), s.got, want[k].tokens)
					b.Drop(s.slot)
				}
			}
		})
	}
}

// TestBatchAdmitDropMidway drops a slot and admits another sequence while
// the others keep decoding, runs steps that some slots sit out, and
// replaces a slot's sequence; every sequence still gets its own tokens.
func TestBatchAdmitDropMidway(t *testing.T) {
	const steps = 8
	b := openBatched(t, "optimum-fp32", 4)
	prompts := [][]int32{batchPrompt(0, 5), batchPrompt(1, 2), batchPrompt(2, 9), batchPrompt(3, 3), batchPrompt(4, 14)}
	want := make([]alone, len(prompts))
	for k, p := range prompts {
		want[k] = aloneGreedy(t, b, p, 2*steps)
	}
	a := admitSeq(t, b, 0, prompts[0], want[0])
	c := admitSeq(t, b, 1, prompts[1], want[1])
	d := admitSeq(t, b, 2, prompts[2], want[2])
	for range 3 {
		stepBatch(t, b, []*batchSeq{a, c, d})
	}
	// c leaves with 3 of its tokens; e takes its slot, f a new one.
	b.Drop(c.slot)
	checkTokens(t, "dropped sequence", c.got, want[1].tokens[:3])
	e := admitSeq(t, b, 1, prompts[3], want[3])
	stepBatch(t, b, []*batchSeq{d, e, a})
	f := admitSeq(t, b, 3, prompts[4], want[4])
	// Steps that a and f sit out leave holes in their rows.
	stepBatch(t, b, []*batchSeq{e, d})
	stepBatch(t, b, []*batchSeq{f})
	for len(a.got) < steps || len(d.got) < steps || len(e.got) < steps || len(f.got) < steps {
		var run []*batchSeq
		for _, s := range []*batchSeq{a, d, e, f} {
			if len(s.got) < steps {
				run = append(run, s)
			}
		}
		stepBatch(t, b, run)
	}
	checkTokens(t, "a", a.got, want[0].tokens[:steps])
	checkTokens(t, "d", d.got, want[2].tokens[:steps])
	checkTokens(t, "e", e.got, want[3].tokens[:steps])
	checkTokens(t, "f", f.got, want[4].tokens[:steps])
	// Admitting to a held slot replaces its sequence.
	g := admitSeq(t, b, 0, prompts[1], want[1])
	for _, br := range b.batch.rows {
		if len(br.cols) != br.next {
			t.Fatalf("slot %d spans %d columns for %d positions after a re-lay, want no holes", br.slot, len(br.cols), br.next)
		}
	}
	// The re-lay left out d's and e's holes; they decode on from it.
	for range steps {
		stepBatch(t, b, []*batchSeq{g, d, e})
	}
	checkTokens(t, "g", g.got, want[1].tokens[:steps])
	checkTokens(t, "d after the re-lay", d.got, want[2].tokens)
	checkTokens(t, "e after the re-lay", e.got, want[3].tokens)
}

// TestBatchProofFP16 proves batching on graphs with a float16 cache and
// logits, within the proof's float16 bounds.
func TestBatchProofFP16(t *testing.T) {
	for _, name := range []string{"optimum-fp16", "optimum-q4f16"} {
		t.Run(name, func(t *testing.T) {
			info := openBatched(t, name, 4).Info()
			if info.Batch != engine.BatchContinuous || info.MaxBatch != 4 {
				t.Fatalf("batch %q max %d (%s), want continuous 4", info.Batch, info.MaxBatch, info.BatchReason)
			}
		})
	}
}

// TestBatchRefused: graphs batching cannot serve, or whose proof fails,
// report serial with why.
func TestBatchRefused(t *testing.T) {
	cases := []struct {
		name, variant string
		maxBatch      int
		reason        string
	}{
		{"not asked", "optimum-fp32", 1, "not asked for"},
		{"position-based mask", "optimum-mask-positions", 4, "batched proof failed"},
		{"shared buffer", "gqa-fp32", 4, "shared buffer"},
		{"hybrid", "optimum-hybrid-conv", 4, "hybrid decoder"},
		{"combined past", "genai-combined-past", 4, "combined key/value"},
		{"genai", "genai-fp32", 4, "genai graph"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := openBatched(t, tc.variant, tc.maxBatch)
			info := b.Info()
			if info.Batch != engine.BatchSerial || info.MaxBatch != 1 || !strings.Contains(info.BatchReason, tc.reason) {
				t.Fatalf("batch %q max %d reason %q, want serial 1 with %q", info.Batch, info.MaxBatch, info.BatchReason, tc.reason)
			}
			if _, err := b.Forward(context.Background(), []int32{1, 2, 3}, 0); err != nil {
				t.Fatal(err)
			}
			var se *StepError
			if err := b.Admit(0); !errors.As(err, &se) {
				t.Fatalf("admit on a serial backend: %v, want a StepError", err)
			}
			if _, err := b.Decode(context.Background(), []int{0}, []int32{1}); !errors.As(err, &se) {
				t.Fatalf("decode on a serial backend: %v, want a StepError", err)
			}
		})
	}
}

// TestBatchDecodeErrors: bad steps and admissions are StepErrors, a
// cancelled step is ctx's error, and none of them changes a slot.
func TestBatchDecodeErrors(t *testing.T) {
	const steps = 5
	b := openBatched(t, "optimum-fp32", 2)
	pa, pc := batchPrompt(0, 4), batchPrompt(1, 7)
	wa, wc := aloneGreedy(t, b, pa, steps), aloneGreedy(t, b, pc, steps)
	ctx := context.Background()
	// Nothing cached: Forward at 0 with a prompt then truncate by a new
	// prompt is the only way in, so the fresh backend's first admit fails.
	fresh := openBatched(t, "optimum-fp32", 2)
	var se *StepError
	if err := fresh.Admit(0); !errors.As(err, &se) {
		t.Fatalf("admit with nothing cached: %v, want a StepError", err)
	}
	a := admitSeq(t, b, 0, pa, wa)
	if err := b.Admit(2); !errors.As(err, &se) {
		t.Fatalf("admit to slot 2 of 2: %v, want a StepError", err)
	}
	c := admitSeq(t, b, 1, pc, wc)
	stepBatch(t, b, []*batchSeq{a, c})
	bad := []struct {
		what  string
		slots []int
		ids   []int32
	}{
		{"no slots", nil, nil},
		{"ids and slots differ", []int{0, 1}, []int32{1}},
		{"a free slot", []int{0, 3}, []int32{1, 1}},
		{"a slot twice", []int{0, 0}, []int32{1, 1}},
	}
	for _, tc := range bad {
		if _, err := b.Decode(ctx, tc.slots, tc.ids); !errors.As(err, &se) {
			t.Fatalf("%s: %v, want a StepError", tc.what, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Decode(cctx, []int{0, 1}, []int32{1, 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled decode: %v, want context.Canceled", err)
	}
	// A step cancelled as it starts is terminated in the runtime (a
	// cancelled step leaves the slots as they were) or, when the step
	// beat the terminate, returns its logits; either way the sequences
	// go on as alone.
	inner, stop := context.WithCancel(ctx)
	sctx := &stepContext{inner: inner, cancel: stop, cancelAt: 1}
	ids := []int32{argmaxOf(a.last), argmaxOf(c.last)}
	out, err := b.Decode(sctx, []int{0, 1}, ids)
	stop()
	switch {
	case err == nil:
		v := b.Info().VocabSize
		a.got, c.got = append(a.got, ids[0]), append(c.got, ids[1])
		a.last, c.last = append(a.last[:0], out[:v]...), append(c.last[:0], out[v:2*v]...)
	case !errors.Is(err, context.Canceled):
		t.Fatalf("decode cancelled as it starts: %v", err)
	}
	if n := sctx.steps.Load(); n != 1 {
		t.Fatalf("%d cancellable runs for a batched step, want 1", n)
	}
	b.Drop(3) // a free slot: nothing happens
	for len(a.got) < steps {
		stepBatch(t, b, []*batchSeq{a, c})
	}
	checkTokens(t, "a", a.got, wa.tokens)
	checkTokens(t, "c", c.got, wc.tokens)
	b.Close()
	if _, err := b.Decode(ctx, []int{0}, []int32{1}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("decode after close: %v, want ErrClosed", err)
	}
}

// TestBatchGrows decodes past the batch's first 64 positions, so its
// buffers double while rows of very different lengths decode on.
func TestBatchGrows(t *testing.T) {
	const steps = 24
	b := openBatched(t, "optimum-fp32", 2)
	long, short := batchPrompt(0, 60), batchPrompt(1, 3)
	wl, ws := aloneGreedy(t, b, long, steps), aloneGreedy(t, b, short, steps)
	l := admitSeq(t, b, 1, long, wl)
	s := admitSeq(t, b, 0, short, ws)
	for range steps {
		stepBatch(t, b, []*batchSeq{s, l})
	}
	if b.batch.lenCap < 2*padBlock {
		t.Fatalf("batch holds %d positions per row after %d steps on a past of 60, want it grown", b.batch.lenCap, steps)
	}
	checkTokens(t, "long", l.got, wl.tokens)
	checkTokens(t, "short", s.got, ws.tokens)
}
