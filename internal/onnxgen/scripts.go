package onnxgen

import (
	"fmt"
	"math"
	"slices"
)

// AltScript is a scripted model's second answer (Config.Alt): followed
// instead of Config.Script when the history holds Trigger.
type AltScript struct {
	// Trigger is the id sequence whose presence anywhere in the history
	// chooses this script.
	Trigger []int32
	// Script is the answer, as Config.Script.
	Script []int32
}

// preferTop and preferStep set the logit raise of Config.Prefer: below
// scriptBias, so the script wins wherever it is allowed, and a step apart
// far wider than the spread of random-weight logits (about ±20), so the
// first allowed id wins, sampled at temperature 1 too.
const (
	preferTop  = 900
	preferStep = 50
)

// checkScriptExtras validates Alt, StopAfter and Prefer against the vocab.
func (c Config) checkScriptExtras() error {
	ids := slices.Concat(c.StopAfter, c.Prefer)
	if c.Alt != nil {
		if len(c.Alt.Trigger) == 0 || len(c.Alt.Script) == 0 || len(c.Script) == 0 {
			return fmt.Errorf("onnxgen: an alternative script needs a trigger, a script and a main script")
		}
		ids = slices.Concat(ids, c.Alt.Trigger, c.Alt.Script)
	}
	for _, id := range ids {
		if id < 0 || int(id) >= c.Vocab {
			return fmt.Errorf("onnxgen: script token %d outside vocab %d", id, c.Vocab)
		}
	}
	return nil
}

// scriptPad is how many -1 entries precede the history, so every window
// the scripts and the trigger slide over exists from the first step.
func (c Config) scriptPad() int64 {
	n := len(c.Script)
	if c.Alt != nil {
		n = max(n, len(c.Alt.Script), len(c.Alt.Trigger))
	}
	return int64(n)
}

// preferBias is the logit raise of Config.Prefer, as a [V] vector.
func (c Config) preferBias() []float32 {
	bias := make([]float32, c.Vocab)
	for i, id := range c.Prefer {
		if bias[id] == 0 {
			bias[id] = max(preferTop-float32(i)*preferStep, preferStep)
		}
	}
	return bias
}

// scriptNext returns, for every row of the step, the id (as float,
// [B, S]) that follows script given the padded history hist [B, pad+T]
// up to that row (the step's S tokens are hist's last S):
// table[step], where the step is the largest k <= len(script) such that
// the last k tokens equal the first k script tokens, or len(script) when
// the last token is ScriptEOS, and table = script ++ [eos]. Every row is
// scripted, not only the last, so a step's logits are right at every
// position, as a real model's are.
func (g *graphBuild) scriptNext(hist string, script []int32) string {
	c, b := g.c, g.b
	L := int64(len(script))
	win := g.rowWindows(hist, L) // [B, S, L]: the last L tokens up to each row
	// want[k-1][j]: for a suffix of length k, position j of the window must
	// be script[j-(L-k)] when j >= L-k; other positions are free.
	want := make([]float32, L*L)
	free := make([]byte, L*L)
	ks := make([]float32, L)
	for k := int64(1); k <= L; k++ {
		ks[k-1] = float32(k)
		for j := int64(0); j < L; j++ {
			if j >= L-k {
				want[(k-1)*L+j] = float32(script[j-(L-k)])
			} else {
				free[(k-1)*L+j] = 1
			}
		}
	}
	eq := b.op("Equal", []string{b.op("Unsqueeze", []string{win, b.i64(2)}), b.f32(want, L, L)}) // [B, S, L, L]
	ok := b.op("Or", []string{eq, b.inline(dtBool, []int64{L, L}, free)})
	match := b.op("ReduceMin", []string{b.op("Cast", []string{ok}, attrI("to", dtFloat))}, attrInts("axes", 3), attrI("keepdims", 0)) // [B, S, L]
	step := b.op("ReduceMax", []string{b.op("Mul", []string{match, b.f32(ks, L)})}, attrInts("axes", 2), attrI("keepdims", 0))        // [B, S]
	last := b.op("Gather", []string{win, b.scalarI64(L - 1)}, attrI("axis", 2))                                                       // [B, S]
	atEOS := b.op("Equal", []string{last, b.scalarF32(float32(c.ScriptEOS))})
	step = b.op("Where", []string{atEOS, b.scalarF32(float32(L)), step})
	idx := b.op("Cast", []string{step}, attrI("to", dtInt64))
	table := make([]float32, L+1)
	for i, id := range script {
		table[i] = float32(id)
	}
	table[L] = float32(c.ScriptEOS)
	return b.op("Gather", []string{b.f32(table, L+1), idx}, attrI("axis", 0)) // [B, S]
}

// rowIndex returns, as int64 [S], the index in hist [B, N] of each row's
// token (the step's S tokens are hist's last S) plus off.
func (g *graphBuild) rowIndex(hist string, off int64) string {
	b := g.b
	n := b.op("Gather", []string{b.op("Shape", []string{hist}), b.scalarI64(1)}, attrI("axis", 0))
	first := b.op("Add", []string{b.op("Sub", []string{n, g.seqLen}), b.scalarI64(off)})
	return b.op("Range", []string{first, b.op("Add", []string{first, g.seqLen}), b.scalarI64(1)})
}

// rowWindows returns the last L tokens of the history up to each row, as
// [B, S, L]. The history's padding (at least L entries) keeps every index
// in range.
func (g *graphBuild) rowWindows(hist string, L int64) string {
	b := g.b
	offs := make([]int64, L)
	for j := range offs {
		offs[j] = int64(j) - (L - 1)
	}
	idx := b.op("Add", []string{b.op("Unsqueeze", []string{g.rowIndex(hist, 0), b.i64(1)}), b.i64(offs...)}) // [S, L]
	return b.op("Gather", []string{hist, idx}, attrI("axis", 1))
}

// holds returns whether the padded history hist [B, pad+T] holds seq
// anywhere up to each row, as bool [B, S]: the m shifted views of hist,
// each compared with one id of seq, all true where an occurrence starts;
// a running count of occurrences by start, read at the last start that
// ends by the row.
func (g *graphBuild) holds(hist string, seq []int32) string {
	b := g.b
	m := int64(len(seq))
	var all string
	for i := range m {
		end := int64(math.MaxInt64)
		if i < m-1 {
			end = -(m - 1 - i)
		}
		view := b.op("Slice", []string{hist, b.i64(i), b.i64(end), b.i64(1)}) // [B, pad+T-m+1]
		eq := b.op("Equal", []string{view, b.scalarF32(float32(seq[i]))})
		if all == "" {
			all = eq
		} else {
			all = b.op("And", []string{all, eq})
		}
	}
	count := b.op("CumSum", []string{b.op("Cast", []string{all}, attrI("to", dtFloat)), b.scalarI64(1)}) // [B, pad+T-m+1]
	found := b.op("Gather", []string{count, g.rowIndex(hist, -(m - 1))}, attrI("axis", 1))               // [B, S]
	return b.op("Greater", []string{found, b.scalarF32(0.5)})
}

// scriptToken is the oracle's scriptLogitBias: the id the scripts put
// next, given the history.
func (c Config) scriptToken(hist []int32) int32 {
	tok := scriptNext(hist, c.Script, int32(c.ScriptEOS))
	if c.Alt != nil && holds(hist, c.Alt.Trigger) {
		tok = scriptNext(hist, c.Alt.Script, int32(c.ScriptEOS))
	}
	if n := len(hist); n > 0 && slices.Contains(c.StopAfter, hist[n-1]) {
		tok = int32(c.ScriptEOS)
	}
	return tok
}

func scriptNext(hist, script []int32, eos int32) int32 {
	L, n := len(script), len(hist)
	if n > 0 && hist[n-1] == eos {
		return eos
	}
	for k := min(L, n); k > 0; k-- {
		if slices.Equal(hist[n-k:], script[:k]) {
			if k == L {
				return eos
			}
			return script[k]
		}
	}
	return script[0]
}

func holds(hist, seq []int32) bool {
	for i := 0; i+len(seq) <= len(hist); i++ {
		if slices.Equal(hist[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}
