package engine

import "math"

// Periods up to exactPeriods are checked at every token, each with its own
// run counter. Longer ones (a repeated tool call, a paragraph written over
// and over) are found through their k-grams: a table remembers where each
// recent k-gram of the generation ended, so a k-gram seen before proposes
// the distance back to it as a period, and a few proposed periods are
// followed at once. Both cost a bounded amount of work per token whatever
// MaxPeriod is.
const (
	exactPeriods = 64
	// gram is the k of the k-grams; a period is proposed once gram tokens
	// have repeated, so it is also the shortest run a candidate starts with.
	gram = 16
	// gramSlots is the size of the direct-mapped table of k-gram ends. A
	// k-gram whose slot another took is missed once; the cycle proposes
	// its period again at its next token.
	gramBits  = 13
	gramSlots = 1 << gramBits
	// candidates is how many long periods are followed at once.
	candidates = 4
	// minLongRepeats is the fewest times a cycle longer than
	// MaxSpan/MinRepeats must repeat.
	minLongRepeats = 3
)

// loopDetector implements LoopGuard incrementally. runs[p] counts how many
// consecutive latest tokens equal the token p positions before them, so the
// last runs[p]+p tokens repeat with period p; long periods keep such a run
// in cands. A tail must reach need(p) tokens before the guard fires.
type loopDetector struct {
	off       bool
	runs      []int
	needs     []int // need(p) of the exact periods
	maxPeriod int   // the longest period looked for, at most half the window
	g         LoopGuard

	// Long periods (beyond exactPeriods).
	hash  uint64  // rolling hash of the last gram tokens
	pow   uint64  // hashBase^gram, to take the oldest token out
	ends  []int32 // k-gram hash slot → 1 + the index its k-gram ended at
	cands [candidates]struct{ period, run int }
}

const hashBase = 0x100000001b3

// newLoopDetector sizes the detector for a model whose context window holds
// window tokens. A cycle must repeat at least twice, so periods longer than
// half the window can never be found and are not tracked: settings far
// beyond any real generation cost nothing and never overflow.
func newLoopDetector(g LoopGuard, window int) *loopDetector {
	d := &loopDetector{off: g.Off, g: g}
	if g.Off {
		return d
	}
	d.maxPeriod = max(min(g.MaxPeriod, window/2), 0)
	d.runs = make([]int, min(d.maxPeriod, exactPeriods)+1)
	d.needs = make([]int, len(d.runs))
	for p := 1; p < len(d.needs); p++ {
		d.needs[p] = d.need(p)
	}
	if d.maxPeriod > exactPeriods {
		d.ends = make([]int32, gramSlots)
		d.pow = 1
		for range gram {
			d.pow *= hashBase
		}
	}
	return d
}

// need is how long a tail repeating with period p must be before the guard
// fires: MinRepeats periods and MinSpan tokens, except that a long cycle
// needs only to cover MaxSpan, or minLongRepeats periods when that is more.
func (d *loopDetector) need(p int) int {
	reps := d.g.MinRepeats
	if d.g.MaxSpan > 0 && reps > minLongRepeats && p > d.g.MaxSpan/reps {
		reps = max(minLongRepeats, (d.g.MaxSpan+p-1)/p)
	}
	if reps > math.MaxInt/p {
		return math.MaxInt // a repeat count no generation reaches
	}
	return max(reps*p, d.g.MinSpan)
}

func (d *loopDetector) reset() {
	clear(d.runs)
	clear(d.ends)
	d.hash = 0
	d.cands = [candidates]struct{ period, run int }{}
}

// push is called with the generated tokens so far, the newest last. It
// returns the period of the cycle found, or 0.
func (d *loopDetector) push(gen []int32) int {
	if d.off {
		return 0
	}
	n := len(gen) - 1
	last := gen[n]
	found := 0
	for p := 1; p < len(d.runs); p++ {
		if n-p >= 0 && gen[n-p] == last {
			d.runs[p]++
		} else {
			d.runs[p] = 0
		}
		if found == 0 && d.runs[p] > 0 && d.runs[p] >= d.needs[p]-p {
			found = p
		}
	}
	if d.ends != nil {
		if p := d.pushLong(gen); found == 0 {
			found = p
		}
	}
	return found
}

// pushLong follows the long candidate periods, proposes one from the
// newest k-gram, and returns a period whose run is long enough, or 0.
func (d *loopDetector) pushLong(gen []int32) int {
	n := len(gen) - 1
	d.hash = d.hash*hashBase + uint64(uint32(gen[n]))
	if n >= gram {
		d.hash -= d.pow * uint64(uint32(gen[n-gram]))
	}
	for i := range d.cands {
		c := &d.cands[i]
		if c.period == 0 {
			continue
		}
		if gen[n] == gen[n-c.period] {
			c.run++
		} else {
			c.period, c.run = 0, 0
		}
	}
	if n+1 < gram {
		return 0
	}
	// The high bits of a multiplicative mix: the low bits of a polynomial
	// hash of consecutive ids repeat with a short period.
	slot := &d.ends[(d.hash*0x9e3779b97f4a7c15)>>(64-gramBits)]
	if prev := int(*slot) - 1; prev >= gram-1 && prev < n {
		d.propose(gen, n-prev)
	}
	*slot = int32(n + 1)
	for _, c := range d.cands {
		if c.period > 0 && c.run >= d.need(c.period)-c.period {
			return c.period
		}
	}
	return 0
}

// propose follows period p when it is long, not followed yet, and the
// k-gram really repeats (the hash may collide), in place of the candidate
// with the shortest run.
func (d *loopDetector) propose(gen []int32, p int) {
	n := len(gen) - 1
	if p <= exactPeriods || p > d.maxPeriod {
		return
	}
	weakest := 0
	for i, c := range d.cands {
		if c.period == p {
			return
		}
		if c.run < d.cands[weakest].run {
			weakest = i
		}
	}
	for i := range gram {
		if gen[n-i] != gen[n-p-i] {
			return
		}
	}
	d.cands[weakest] = struct{ period, run int }{p, gram}
}
