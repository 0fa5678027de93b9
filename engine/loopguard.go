package engine

// loopDetector implements LoopGuard incrementally: runs[p] counts how many
// consecutive latest tokens equal the token p positions before them, so the
// last runs[p]+p tokens repeat with period p.
type loopDetector struct {
	g    LoopGuard
	runs []int
}

func newLoopDetector(g LoopGuard) *loopDetector {
	d := &loopDetector{g: g}
	if !g.Off {
		d.runs = make([]int, g.MaxPeriod+1)
	}
	return d
}

func (d *loopDetector) reset() { clear(d.runs) }

// push is called with the generated tokens so far, the newest last. It
// returns the period of the cycle found, or 0.
func (d *loopDetector) push(gen []int32) int {
	if d.g.Off {
		return 0
	}
	n := len(gen) - 1
	last := gen[n]
	found := 0
	for p := 1; p <= d.g.MaxPeriod; p++ {
		if n-p >= 0 && gen[n-p] == last {
			d.runs[p]++
		} else {
			d.runs[p] = 0
		}
		if found == 0 && d.runs[p] > 0 && d.runs[p]+p >= max(d.g.MinRepeats*p, d.g.MinSpan) {
			found = p
		}
	}
	return found
}
