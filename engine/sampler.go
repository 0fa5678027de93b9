package engine

import (
	"math"
	mbits "math/bits"
	"math/rand/v2"
	"slices"
)

// samplingParams is the part of a Request the sampler uses.
type samplingParams struct {
	temperature float64
	topK        int
	topP        float64
	minP        float64
	repetition  float64 // 0 or 1: off
	frequency   float64
	presence    float64
}

func (p *samplingParams) penalised() bool {
	return (p.repetition != 0 && p.repetition != 1) || p.frequency != 0 || p.presence != 0
}

// sampler picks the next token from logits. It owns every buffer it needs,
// sized to the vocabulary once, so sampling allocates nothing. One sampler
// belongs to one Engine and is used by the stream holding the engine.
//
// Order of operations (as in Hugging Face transformers): repetition penalty,
// then frequency and presence penalties, then temperature, then top_k, then
// top_p over what top_k kept (renormalised), then min_p; finally one draw.
type sampler struct {
	p       samplingParams
	weights []float64 // exp((logit-max)/T) per token; scratch
	idx     []int32   // candidate ids; scratch
	counts  []int32   // times each id was generated in this request
	seen    []bool    // id occurs in the prompt or the generated text
	touched []int32   // ids whose counts/seen were set, to reset cheaply
	hcount  [histSize]int32
	hmass   [histSize]float64
	pcg     *rand.PCG
	rng     *rand.Rand
	mask    []uint64  // allowed ids of a constrained step; scratch
	masked  []float32 // logits with disallowed ids at -Inf, or only the allowed ones; scratch
	ids     []int32   // the allowed ids of a sparse constrained step, in order; scratch
	// sums holds the running sum of the weights (those the draw counts) at
	// the end of each drawBlock of them, so the draw can skip whole blocks.
	sums []float64
}

// drawBlock is how many weights one entry of sampler.sums covers.
const drawBlock = 256

// sparseMask: a constrained step allowing at most 1/sparseMask of the
// vocabulary samples over the allowed ids only rather than over the whole
// vocabulary with the others at -Inf. Gathering costs about as much per
// allowed id as weighing does, so the gain is everything else.
const sparseMask = 8

func newSampler(vocab int) *sampler {
	pcg := rand.NewPCG(1, 2)
	return &sampler{
		weights: make([]float64, vocab),
		idx:     make([]int32, 0, vocab),
		touched: make([]int32, 0, vocab),
		counts:  make([]int32, vocab),
		seen:    make([]bool, vocab),
		sums:    make([]float64, 0, (vocab+drawBlock-1)/drawBlock),
		pcg:     pcg,
		rng:     rand.New(pcg),
	}
}

// start prepares the sampler for a request over prompt.
func (s *sampler) start(p samplingParams, seed uint64, prompt []int32) {
	for _, id := range s.touched {
		s.counts[id] = 0
		s.seen[id] = false
	}
	s.touched = s.touched[:0]
	s.p = p
	s.pcg.Seed(seed, seed^0x9e3779b97f4a7c15)
	if p.repetition != 0 && p.repetition != 1 {
		for _, id := range prompt {
			s.mark(id)
		}
	}
}

func (s *sampler) mark(id int32) {
	if id < 0 || int(id) >= len(s.seen) {
		return
	}
	if !s.seen[id] {
		s.seen[id] = true
		s.touched = append(s.touched, id)
	}
}

// accept records a generated token for the penalties.
func (s *sampler) accept(id int32) {
	if id < 0 || int(id) >= len(s.seen) {
		return
	}
	s.mark(id)
	s.counts[id]++
}

// adjust applies the penalties to one logit of a token already seen.
func (s *sampler) adjust(id int, v float64) float64 {
	if r := s.p.repetition; r != 0 && r != 1 {
		if v > 0 {
			v /= r
		} else {
			v *= r
		}
	}
	if c := s.counts[id]; c > 0 {
		v -= s.p.frequency*float64(c) + s.p.presence
	}
	return v
}

// maskBuf returns the zeroed mask buffer, one bit per vocabulary id.
func (s *sampler) maskBuf() []uint64 {
	n := (len(s.weights) + 63) / 64
	if cap(s.mask) < n {
		s.mask = make([]uint64, n)
		s.masked = make([]float32, len(s.weights))
		s.ids = make([]int32, len(s.weights))
	}
	s.mask = s.mask[:n]
	clear(s.mask)
	return s.mask
}

// sampleMasked samples among the ids allowed by mask; ok is false when
// mask allows nothing. It picks exactly the id that sample would pick from
// the logits with every other id at -Inf, then falling back to the lowest
// allowed id if that one is not allowed (possible only when every allowed
// logit is -Inf or NaN, where sample could land anywhere): so the result is
// always inside the mask, and the same whichever way it is computed. A
// sparse mask (JSON's structure between strings: a quote, a colon, a few
// digits) is sampled over a gathered list of the allowed ids; a dense one
// (a string's content) over the masked copy of the logits.
func (s *sampler) sampleMasked(logits []float32, mask []uint64) (id int32, ok bool) {
	n := min(len(logits), len(s.weights))
	words := (n + 63) / 64
	mask = mask[:words]
	tail := ^uint64(0) // the bits of the last word that are ids below n
	if n%64 != 0 {
		tail = 1<<(n%64) - 1
	}
	allowed, first := 0, -1
	for w, bits := range mask {
		if w == words-1 {
			bits &= tail
		}
		if bits != 0 && first < 0 {
			first = w*64 + mbits.TrailingZeros64(bits)
		}
		allowed += mbits.OnesCount64(bits)
	}
	if allowed == 0 {
		return 0, false
	}
	if allowed*sparseMask <= n {
		ids, vals := s.ids[:0], s.masked[:0]
		for w, bits := range mask {
			if w == words-1 {
				bits &= tail
			}
			for ; bits != 0; bits &= bits - 1 {
				i := w*64 + mbits.TrailingZeros64(bits)
				ids = append(ids, int32(i))
				vals = append(vals, logits[i])
			}
		}
		return ids[s.sampleOver(vals, ids, n)], true
	}
	dst := s.masked[:n]
	neg := float32(math.Inf(-1))
	for w, bits := range mask {
		lo, hi := w*64, min(w*64+64, n)
		if w == words-1 {
			bits &= tail
		}
		switch ones := mbits.OnesCount64(bits); {
		case ones == hi-lo:
			copy(dst[lo:hi], logits[lo:hi])
		case ones < 32:
			for i := lo; i < hi; i++ {
				dst[i] = neg
			}
			for ; bits != 0; bits &= bits - 1 {
				i := lo + mbits.TrailingZeros64(bits)
				dst[i] = logits[i]
			}
		default:
			copy(dst[lo:hi], logits[lo:hi])
			for z := ^bits & (1<<(hi-lo) - 1); z != 0; z &= z - 1 {
				dst[lo+mbits.TrailingZeros64(z)] = neg
			}
		}
	}
	id = int32(s.sampleOver(dst, nil, n))
	if mask[id>>6]&(1<<(id&63)) == 0 {
		id = int32(first)
	}
	return id, true
}

// sample returns the next token id. logits must have one value per
// vocabulary entry.
func (s *sampler) sample(logits []float32) int32 {
	n := min(len(logits), len(s.weights))
	return int32(s.sampleOver(logits[:n], nil, n))
}

// sampleOver samples from vals, the logits of the ids listed in ids (in
// increasing order; nil: vals is the whole vocabulary, in id order), and
// returns the index into vals. vocab is the vocabulary's size. Over a list
// it picks what it would pick over the whole vocabulary with every other
// id at -Inf (those ids weigh 0, and adding or subtracting 0 changes no
// sum), except where that pick would be an id outside the list: it then
// returns 0, the lowest listed id, which is where the caller falls back.
func (s *sampler) sampleOver(vals []float32, ids []int32, vocab int) int {
	penalised := s.p.penalised()
	if s.p.temperature == 0 && !penalised {
		return int(argmax(vals))
	}
	if s.p.temperature == 0 {
		best, bestV := 0, math.Inf(-1)
		for i, l := range vals {
			v := float64(l)
			if penalised {
				v = s.penalise(i, ids, v)
			}
			if v > bestV {
				best, bestV = i, v
			}
		}
		return best
	}

	n := len(vals)
	w := s.weights[:n]
	invT := 1 / s.p.temperature
	maxV := math.Inf(-1)
	for i, l := range vals {
		v := float64(l)
		if penalised {
			v = s.penalise(i, ids, v)
		}
		v *= invT
		w[i] = v
		if v > maxV {
			maxV = v
		}
	}
	if math.IsInf(maxV, 0) { // all -Inf/NaN, or a +Inf logit: nothing to weigh
		for i, v := range w {
			if v == maxV {
				// Over the whole vocabulary the first -Inf might be an
				// unlisted id: it is a listed one only if every id below
				// it is listed.
				if ids != nil && v < 0 && int(ids[i]) != i {
					return 0
				}
				return i
			}
		}
		return 0
	}
	total := 0.0
	sums := s.sums[:0]
	for lo := 0; lo < n; lo += drawBlock {
		blk := w[lo:min(lo+drawBlock, n)]
		for i, v := range blk {
			// Weights are relative to the best token's (1). Below e^-40 a
			// token cannot matter next to it, so exp is skipped.
			e := 0.0
			if d := v - maxV; d > -40 {
				e = expNeg(d)
			}
			blk[i] = e
			total += e
		}
		sums = append(sums, total)
	}
	s.sums = sums

	useK := s.p.topK > 0 && s.p.topK < vocab
	useP := s.p.topP > 0 && s.p.topP < 1
	if !useK && !useP && s.p.minP == 0 {
		return s.draw(w, total, 0)
	}

	// Every filter keeps the tokens whose weight is at or above a
	// threshold: the k-th largest weight (top_k), the weight at which the
	// mass of the larger ones reaches top_p of what top_k kept (top_p),
	// min_p itself (weights are relative to the best token's). Thresholds
	// are found with a histogram over the weights' float exponents and a
	// sort of a single bucket, so a flat 150k distribution costs a few
	// passes, not a full sort.
	if useK || useP {
		s.histogram(w)
	}
	t, kept := 0.0, total
	if useK {
		t = s.thresholdCount(w, s.p.topK)
		kept = 0
		for _, e := range w {
			if e >= t {
				kept += e
			}
		}
	}
	if useP {
		t = max(t, s.thresholdMass(w, s.p.topP*kept))
	}
	t = max(t, s.p.minP)
	return s.draw(w, total, t)
}

// penalise applies the penalties to v, the logit at index i of a list of
// ids (nil: i is the id).
func (s *sampler) penalise(i int, ids []int32, v float64) float64 {
	id := i
	if ids != nil {
		id = int(ids[i])
	}
	if s.seen[id] {
		v = s.adjust(id, v)
	}
	return v
}

// Weights lie in [e^-40, 1] (or are 0). weightKey maps them, monotonically,
// to a histogram bucket: the float64 exponent and the top 4 mantissa bits,
// counted from those of e^-40 (exponent -58).
const (
	keyBase  = (1023 - 58) << 4
	histSize = 1024
)

func weightKey(e float64) int { return int(math.Float64bits(e)>>48) - keyBase }

// histogram counts the positive weights and sums them per bucket. Runs of
// weights in the same bucket (long flat tails) are summed in registers
// rather than through memory.
func (s *sampler) histogram(w []float64) {
	clear(s.hcount[:])
	clear(s.hmass[:])
	last, n, m := -1, int32(0), 0.0
	for _, e := range w {
		if e <= 0 {
			continue
		}
		if b := weightKey(e); b != last {
			if last >= 0 {
				s.hcount[last] += n
				s.hmass[last] += m
			}
			last, n, m = b, 0, 0
		}
		n++
		m += e
	}
	if last >= 0 {
		s.hcount[last] += n
		s.hmass[last] += m
	}
}

// bucket collects the ids whose weight falls in bucket b, largest first.
func (s *sampler) bucket(w []float64, b int) []int32 {
	idx := s.idx[:0]
	for i, e := range w {
		if e > 0 && weightKey(e) == b {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(x, y int32) int {
		switch wx, wy := w[x], w[y]; {
		case wx > wy:
			return -1
		case wx < wy:
			return 1
		}
		return int(x - y)
	})
	s.idx = idx
	return idx
}

// thresholdCount returns the k-th largest weight (0 when fewer than k
// tokens have any weight).
func (s *sampler) thresholdCount(w []float64, k int) float64 {
	c := 0
	for b := histSize - 1; b >= 0; b-- {
		n := int(s.hcount[b])
		if c+n >= k {
			return w[s.bucket(w, b)[k-c-1]]
		}
		c += n
	}
	return 0
}

// thresholdMass returns the weight of the token at which the running mass,
// largest weights first, reaches target.
func (s *sampler) thresholdMass(w []float64, target float64) float64 {
	acc := 0.0
	for b := histSize - 1; b >= 0; b-- {
		if s.hcount[b] == 0 {
			continue
		}
		if acc+s.hmass[b] >= target {
			idx := s.bucket(w, b)
			for _, id := range idx {
				acc += w[id]
				if acc >= target {
					return w[id]
				}
			}
			return w[idx[len(idx)-1]]
		}
		acc += s.hmass[b]
	}
	return 0
}

// draw samples one token among those whose weight is at least t (and
// above zero), in proportion to the weight, and returns its index in w.
// total is the sum of all weights and s.sums its running value at every
// drawBlock, from the weighing. The token drawn is the first at which the
// remainder r - e₁ - e₂ - … (subtracted in id order, rounded at each step)
// drops below 0; see skip for how most of the walk is avoided.
func (s *sampler) draw(w []float64, total, t float64) int {
	mass, sums := total, s.sums
	if t > 0 {
		mass, sums = 0, s.sums[:0]
		for lo := 0; lo < len(w); lo += drawBlock {
			for _, e := range w[lo:min(lo+drawBlock, len(w))] {
				if e >= t {
					mass += e
				}
			}
			sums = append(sums, mass)
		}
		s.sums = sums
	}
	r := s.rng.Float64() * mass
	if i, ok := skip(w, t, r, mass, sums); ok {
		return i
	}
	return walk(w, t, r)
}

// walk subtracts the weights at or above t (and above zero) from r in id
// order and returns the index at which r drops below 0 (the last such
// weight's, should rounding keep r from ever dropping).
func walk(w []float64, t, r float64) int {
	last := 0
	for i, e := range w {
		if e > 0 && e >= t {
			last = i
			r -= e
			if r < 0 {
				return i
			}
		}
	}
	return last
}

// skip finds the token draw's walk would stop at without walking: the
// remainder after token k is r minus the running sum of the weights up to
// k, and sums (the running sum, rounded the same way at each step as the
// walk's subtractions are) tells it to within a rounding bound. The bound:
// each chain is at most len(w) roundings of partial results no larger than
// 2·mass, so together with the one rounding of their difference they are
// off from the exact remainder by less than (3·len(w)+2)·2⁻⁵³·mass; margin
// is 8·len(w)·2⁻⁵³·mass. Blocks whose end leaves more than margin are passed
// over; in the block where the remainder reaches margin the running sum is
// redone weight by weight, and the first token leaving less than -margin
// is the one the walk stops at (the remainder only falls). Where a
// remainder lies within margin of 0, the rounding could decide: ok is
// false and draw walks, so the answer is always the walk's.
func skip(w []float64, t, r, mass float64, sums []float64) (int, bool) {
	margin := float64(len(w)) * 0x1p-50 * mass
	b := 0
	for b < len(sums) && r-sums[b] > margin {
		b++
	}
	if b == len(sums) {
		return 0, false
	}
	acc := 0.0
	if b > 0 {
		acc = sums[b-1]
	}
	lo := b * drawBlock
	for i, e := range w[lo:min(lo+drawBlock, len(w))] {
		if e > 0 && e >= t {
			acc += e
			if d := r - acc; d <= margin {
				return lo + i, d < -margin
			}
		}
	}
	return 0, false
}

// expNeg returns e^x for x in (-40, 0] with a relative error below 1e-8,
// about three times faster than math.Exp, which matters when it runs once
// per vocabulary entry per token: e^x = 2^n · e^g with n = round(x/ln 2)
// and |g| ≤ ln2/2, e^g by its Taylor series to degree 7.
func expNeg(x float64) float64 {
	const ln2 = 0.6931471805599453
	k := int64(x*(1/ln2) - 0.5) // rounds, as x <= 0
	g := x - float64(k)*ln2
	p := 1 + g*(1+g*(1.0/2+g*(1.0/6+g*(1.0/24+g*(1.0/120+g*(1.0/720+g*(1.0/5040)))))))
	return p * math.Float64frombits(uint64(k+1023)<<52)
}

// argmax returns the index of the first largest value; NaN never wins, and
// 0 when nothing beats -Inf. A greedy step over a 150k vocabulary scans the
// whole row once per token, so the scan matters: the new maximum is rarely
// in a block, and one short-circuit test per block of eight skips the
// per-value bookkeeping (about 4× faster than a value-by-value scan).
func argmax(v []float32) int32 {
	best, top := 0, float32(math.Inf(-1))
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		if w[0] > top || w[1] > top || w[2] > top || w[3] > top ||
			w[4] > top || w[5] > top || w[6] > top || w[7] > top {
			for j, x := range w {
				if x > top {
					best, top = i+j, x
				}
			}
		}
	}
	for ; i < len(v); i++ {
		if v[i] > top {
			best, top = i, v[i]
		}
	}
	return int32(best)
}
