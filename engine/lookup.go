package engine

import "time"

// Prompt-lookup drafting: the next tokens are guessed by finding the
// newest earlier place where the last few tokens (an n-gram) occurred, in
// the prompt or in the text generated so far, and proposing what followed
// them there. Rewrites, edits of code and answers that quote their context
// copy long runs, and each run's continuation is found this way; free text
// rarely repeats an n-gram, and then nothing is drafted at all.
const (
	// lookupMaxN and lookupMinN bound the n-gram lengths tried, longest
	// first: a longer match predicts its continuation better, and a
	// single token repeats too often in free text to be worth a draft.
	lookupMaxN = 3
	lookupMinN = 2
	// lookupBits sizes the direct-mapped table of n-gram ends per n. An
	// n-gram whose slot a later one took is missed, which costs a draft,
	// never a wrong token.
	lookupBits  = 14
	lookupSlots = 1 << lookupBits
)

// drafter indexes a token history by its n-grams and drafts continuations.
// It allocates only when the history grows past its capacity.
type drafter struct {
	hist []int32
	// ends[n-lookupMinN][slot] is 1 + the index at which the newest
	// indexed n-gram hashing to slot ended (0: none).
	ends [lookupMaxN - lookupMinN + 1][]int32
	// indexed is how many history positions have had their n-grams
	// entered: the n-grams ending at 0 .. indexed-1.
	indexed int
}

func newDrafter() *drafter {
	d := &drafter{}
	for i := range d.ends {
		d.ends[i] = make([]int32, lookupSlots)
	}
	return d
}

// reset starts a new history with prompt.
func (d *drafter) reset(prompt []int32) {
	d.hist = append(d.hist[:0], prompt...)
	for i := range d.ends {
		clear(d.ends[i])
	}
	d.indexed = 0
}

// push appends a token to the history.
func (d *drafter) push(id int32) { d.hist = append(d.hist, id) }

// gramSlot hashes the n tokens ending at index end into a table slot.
func gramSlot(h []int32, end, n int) int {
	x := uint64(n)
	for _, id := range h[end-n+1 : end+1] {
		x = (x ^ uint64(uint32(id))) * 0x100000001b3
	}
	return int((x * 0x9e3779b97f4a7c15) >> (64 - lookupBits))
}

// index enters the n-grams ending before the history's last position,
// so a lookup of the last n-gram finds only earlier occurrences.
func (d *drafter) index() {
	last := len(d.hist) - 1
	for ; d.indexed < last; d.indexed++ {
		end := d.indexed
		for n := lookupMinN; n <= lookupMaxN && n <= end+1; n++ {
			d.ends[n-lookupMinN][gramSlot(d.hist, end, n)] = int32(end + 1)
		}
	}
}

// draft appends to dst k tokens that followed the newest earlier
// occurrence of the history's last n-gram, trying the longest n first,
// and returns dst; nothing when no n-gram of at least lookupMinN tokens
// occurred before.
func (d *drafter) draft(dst []int32, k int) []int32 {
	h := d.hist
	last := len(h) - 1
	if k <= 0 || last < lookupMinN {
		return dst
	}
	d.index()
	for n := min(lookupMaxN, last); n >= lookupMinN; n-- {
		e := int(d.ends[n-lookupMinN][gramSlot(h, last, n)]) - 1
		if e < n-1 || e >= last || !sameGram(h, e, last, n) {
			continue // none, or a different n-gram in the same slot
		}
		// What followed, read on into the draft itself where it runs
		// past the history: a text repeating with period last-e goes on
		// repeating, so a loop's draft is as long as k.
		start := len(dst)
		for j := e + 1; j < e+1+k; j++ {
			if j < len(h) {
				dst = append(dst, h[j])
			} else {
				dst = append(dst, dst[start+j-len(h)])
			}
		}
		return dst
	}
	return dst
}

// sameGram reports whether the n tokens ending at a equal those ending at b.
func sameGram(h []int32, a, b, n int) bool {
	for i := range n {
		if h[a-i] != h[b-i] {
			return false
		}
	}
	return true
}

// Draft length. A verify step of k+1 tokens costs little more than a
// one-token step while the runtime is bound by reading the weights, more
// as k grows and compute takes over; a rejected draft costs that extra for
// nothing. So k starts small, doubles while drafts are accepted whole,
// drops to what was accepted (plus one) after a rejection, and after a
// draft rejected at its first token drafting pauses for 1, 2, 4 ... up to
// specMaxPause tokens, so text with nothing to copy runs nearly as plain
// decoding. Within that, stepCosts picks the length that pays best, or
// none.
const (
	specStartK   = 4
	specMaxK     = 8
	specMaxPause = 64
	// specStartRate and specRateWeight start and smooth draftPolicy.rate.
	specStartRate  = 0.7
	specRateWeight = 0.3
)

// stepCosts learns what a runtime step of n tokens costs on the engine's
// model and machine, for the draft length: a verify step costs little
// more than a one-token step while reading the weights dominates (a large
// float32 model on the CPU), and much more where computing each row does
// (4-bit weights, whose one-token step is cheap, or a GPU). It keeps a
// running mean per step length; lengths not measured yet are estimated
// from those that were, optimistically (as cheap as the longest measured
// below them) until two points give a slope, so that longer drafts get
// tried and measured.
type stepCosts struct {
	t [specMaxK + 2]float64 // seconds per step of n tokens; 0 unknown
}

// specCostWeight smooths stepCosts.
const specCostWeight = 0.2

// observe records a step of n tokens that took d.
func (c *stepCosts) observe(n int, d time.Duration) {
	if n < 1 || n >= len(c.t) || d <= 0 {
		return
	}
	x := d.Seconds()
	if c.t[n] == 0 {
		c.t[n] = x
		return
	}
	c.t[n] += specCostWeight * (x - c.t[n])
}

// estimate returns the cost of a step of n tokens: measured, else
// interpolated between the nearest measured lengths around it, else
// extrapolated from the two longest measured below it, else the nearest
// measured below.
func (c *stepCosts) estimate(n int) float64 {
	if c.t[n] > 0 {
		return c.t[n]
	}
	lo, lo2, hi := 0, 0, 0
	for m := n - 1; m >= 1; m-- {
		if c.t[m] > 0 {
			if lo == 0 {
				lo = m
			} else {
				lo2 = m
				break
			}
		}
	}
	for m := n + 1; m < len(c.t); m++ {
		if c.t[m] > 0 {
			hi = m
			break
		}
	}
	switch {
	case lo > 0 && hi > 0:
		return c.t[lo] + (c.t[hi]-c.t[lo])*float64(n-lo)/float64(hi-lo)
	case lo > 0 && lo2 > 0:
		return max(c.t[lo]+(c.t[lo]-c.t[lo2])*float64(n-lo)/float64(lo-lo2), c.t[lo])
	case lo > 0:
		return c.t[lo]
	}
	return 0
}

// best returns the draft length up to k that promises the most tokens per
// second: a draft of j tokens yields 1 + rate + rate² + … + rateʲ tokens
// on average (each drafted token accepted with probability rate once those
// before it were) for the cost of a step of j+1 tokens; 0 when no draft
// beats the one-token step. Without a measured one-token step it returns
// k.
func (c *stepCosts) best(k int, rate float64) int {
	if c.t[1] == 0 {
		return k
	}
	bestK, bestV := 0, 1/c.t[1]
	tokens, p := 1.0, 1.0
	for j := 1; j <= k; j++ {
		p *= rate
		tokens += p
		if v := tokens / c.estimate(j+1); v > bestV {
			bestK, bestV = j, v
		}
	}
	return bestK
}

// draftPolicy is the adaptive draft length of one stream.
type draftPolicy struct {
	k      int // the next draft's length
	misses int // drafts in a row rejected at their first token
	pause  int // tokens to decode before drafting again
	// rate is a running estimate of the chance that a drafted token is
	// accepted, given those before it were.
	rate float64
}

func (p *draftPolicy) reset() { *p = draftPolicy{k: specStartK, rate: specStartRate} }

// skip is called for a draft that the costs say would not pay: drafting
// pauses as after a rejected draft, except that once the pause is at its
// longest a one-token draft is tried (skip returns 1), so that the costs
// and the acceptance rate are measured again.
func (p *draftPolicy) skip() int {
	if 1<<p.misses > specMaxPause {
		return 1
	}
	p.misses++
	p.pause = min(1<<(p.misses-1), specMaxPause)
	return 0
}

// want returns the length of the next draft, 0 while paused (one token of
// the pause is used up).
func (p *draftPolicy) want() int {
	if p.pause > 0 {
		p.pause--
		return 0
	}
	return p.k
}

// update adapts to a draft of drafted tokens of which accepted were.
func (p *draftPolicy) update(drafted, accepted int) {
	// Each drafted token that was checked (the accepted ones and the first
	// rejected) is one trial of the rate.
	trials := min(accepted+1, drafted)
	p.rate += specRateWeight * (float64(accepted)/float64(trials) - p.rate)
	switch {
	case accepted == drafted:
		p.k = min(2*p.k, specMaxK)
		p.misses = 0
	case accepted == 0:
		p.k = 1
		p.misses++
		p.pause = min(1<<(p.misses-1), specMaxPause)
	default:
		p.k = max(accepted+1, 1)
		p.misses = 0
	}
}
