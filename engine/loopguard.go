package engine

import "math"

// loopDetector implements LoopGuard incrementally: runs[p] counts how many
// consecutive latest tokens equal the token p positions before them, so the
// last runs[p]+p tokens repeat with period p. need[p] is the length such a
// tail must reach before the guard fires.
type loopDetector struct {
	off  bool
	runs []int
	need []int
}

// newLoopDetector sizes the detector for a model whose context window holds
// window tokens. A cycle must repeat at least twice, so periods longer than
// half the window can never be found and are not tracked: settings far
// beyond any real generation cost nothing and never overflow.
func newLoopDetector(g LoopGuard, window int) *loopDetector {
	d := &loopDetector{off: g.Off}
	if g.Off {
		return d
	}
	periods := max(min(g.MaxPeriod, window/2), 0)
	d.runs = make([]int, periods+1)
	d.need = make([]int, periods+1)
	for p := 1; p <= periods; p++ {
		d.need[p] = math.MaxInt // a repeat count no generation reaches
		if g.MinRepeats <= math.MaxInt/p {
			d.need[p] = max(g.MinRepeats*p, g.MinSpan)
		}
	}
	return d
}

func (d *loopDetector) reset() { clear(d.runs) }

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
		if found == 0 && d.runs[p] > 0 && d.runs[p] >= d.need[p]-p {
			found = p
		}
	}
	return found
}
