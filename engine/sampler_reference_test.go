package engine

import (
	"math"
	mbits "math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// referenceSampler is the sampler as it was before its fast paths (sparse
// masks sampled over the allowed ids only, the draw skipping blocks of
// weights): every logit weighed and every weight drawn in id order. The
// fast paths must pick exactly the ids it picks from the same random
// stream, so it stays here as the yardstick. It shares the penalty state
// (counts, seen) of the sampler under test and has its own scratch and
// random source.
type referenceSampler struct {
	s       *sampler
	weights []float64
	idx     []int32
	masked  []float32
	hcount  [histSize]int32
	hmass   [histSize]float64
	rng     *rand.Rand
}

func newReferenceSampler(s *sampler, seed uint64) *referenceSampler {
	n := len(s.weights)
	return &referenceSampler{s: s, weights: make([]float64, n), idx: make([]int32, 0, n),
		masked: make([]float32, n), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (s *referenceSampler) sampleMasked(logits []float32, mask []uint64) (id int32, ok bool) {
	n := min(len(logits), len(s.weights))
	dst := s.masked[:n]
	neg := float32(math.Inf(-1))
	first := -1
	for w := 0; w*64 < n; w++ {
		lo, hi := w*64, min(w*64+64, n)
		bits := mask[w]
		if bits != 0 && first < 0 {
			first = lo + mbits.TrailingZeros64(bits)
		}
		for i := lo; i < hi; i++ {
			if bits&(1<<(i-lo)) != 0 {
				dst[i] = logits[i]
			} else {
				dst[i] = neg
			}
		}
	}
	if first < 0 || first >= n {
		return 0, false
	}
	id = s.sample(dst)
	if mask[id>>6]&(1<<(id&63)) == 0 {
		id = int32(first)
	}
	return id, true
}

func (s *referenceSampler) sample(logits []float32) int32 {
	n := min(len(logits), len(s.weights))
	logits = logits[:n]
	p := s.s.p
	penalised := p.penalised()
	if p.temperature == 0 && !penalised {
		return naiveArgmax(logits)
	}
	if p.temperature == 0 {
		best, bestV := 0, math.Inf(-1)
		for i, l := range logits {
			v := float64(l)
			if penalised && s.s.seen[i] {
				v = s.s.adjust(i, v)
			}
			if v > bestV {
				best, bestV = i, v
			}
		}
		return int32(best)
	}
	w := s.weights[:n]
	invT := 1 / p.temperature
	maxV := math.Inf(-1)
	for i, l := range logits {
		v := float64(l)
		if penalised && s.s.seen[i] {
			v = s.s.adjust(i, v)
		}
		v *= invT
		w[i] = v
		if v > maxV {
			maxV = v
		}
	}
	if math.IsInf(maxV, 0) {
		for i, v := range w {
			if v == maxV {
				return int32(i)
			}
		}
		return 0
	}
	total := 0.0
	for i, v := range w {
		e := 0.0
		if d := v - maxV; d > -40 {
			e = expNeg(d)
		}
		w[i] = e
		total += e
	}
	useK := p.topK > 0 && p.topK < n
	useP := p.topP > 0 && p.topP < 1
	if !useK && !useP && p.minP == 0 {
		return s.draw(w, total, 0)
	}
	if useK || useP {
		s.histogram(w)
	}
	t, kept := 0.0, total
	if useK {
		t = s.thresholdCount(w, p.topK)
		kept = 0
		for _, e := range w {
			if e >= t {
				kept += e
			}
		}
	}
	if useP {
		t = max(t, s.thresholdMass(w, p.topP*kept))
	}
	t = max(t, p.minP)
	return s.draw(w, total, t)
}

func (s *referenceSampler) histogram(w []float64) {
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

func (s *referenceSampler) bucket(w []float64, b int) []int32 {
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

func (s *referenceSampler) thresholdCount(w []float64, k int) float64 {
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

func (s *referenceSampler) thresholdMass(w []float64, target float64) float64 {
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

func (s *referenceSampler) draw(w []float64, total, t float64) int32 {
	mass := total
	if t > 0 {
		mass = 0
		for _, e := range w {
			if e >= t {
				mass += e
			}
		}
	}
	r := s.rng.Float64() * mass
	last := 0
	for i, e := range w {
		if e > 0 && e >= t {
			last = i
			r -= e
			if r < 0 {
				return int32(i)
			}
		}
	}
	return int32(last)
}

// referenceLogits fills v with one of several shapes of logits, special
// values included.
func referenceLogits(r *rand.Rand, v []float32, shape int) {
	switch shape {
	case 0: // noise
		for i := range v {
			v[i] = float32(r.NormFloat64() * 3)
		}
	case 1: // nearly flat: the draw walks far
		for i := range v {
			v[i] = float32(r.Float64() * 1e-3)
		}
	case 2: // one strong token somewhere
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		v[r.IntN(len(v))] = 30
	case 3: // a few ties, -Inf and NaN
		for i := range v {
			switch r.IntN(10) {
			case 0:
				v[i] = float32(math.Inf(-1))
			case 1:
				v[i] = float32(math.NaN())
			default:
				v[i] = float32(r.IntN(4))
			}
		}
	case 4: // everything -Inf or NaN
		for i := range v {
			if r.IntN(3) == 0 {
				v[i] = float32(math.NaN())
			} else {
				v[i] = float32(math.Inf(-1))
			}
		}
	case 5: // a +Inf among noise
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		v[r.IntN(len(v))] = float32(math.Inf(1))
	case 6: // a huge spread: most weights underflow to 0
		for i := range v {
			v[i] = float32(r.NormFloat64() * 200)
		}
	}
}

// referenceMask fills mask (over n ids) with one of several densities;
// it reports false for no mask (an unconstrained step).
func referenceMask(r *rand.Rand, mask []uint64, n, shape int) bool {
	clear(mask)
	set := func(i int) { mask[i>>6] |= 1 << (i & 63) }
	switch shape {
	case 0:
		return false
	case 1: // a single id
		set(r.IntN(n))
	case 2: // a handful, scattered
		for range 1 + r.IntN(20) {
			set(r.IntN(n))
		}
	case 3: // about one in ten
		for i := range n {
			if r.IntN(10) == 0 {
				set(i)
			}
		}
	case 4: // about 97 %: a string's content
		for i := range n {
			if r.IntN(32) != 0 {
				set(i)
			}
		}
	case 5: // everything
		for i := range n {
			set(i)
		}
	case 6: // a low prefix, all of id 0 up
		for i := range 1 + r.IntN(n) {
			set(i)
		}
	case 7: // nothing below n, bits only past the vocabulary
		if n%64 != 0 {
			mask[len(mask)-1] |= ^uint64(0) << (n % 64)
		}
	case 8: // just under the sparse limit, in runs
		for i := 0; i < n; i += 1 + r.IntN(16) {
			set(i)
		}
	}
	return true
}

// TestSamplerMatchesReference draws from many logits × masks × settings
// with the sampler and with the reference from the same seed, and wants
// the same id at every step (so also the same use of the random stream).
func TestSamplerMatchesReference(t *testing.T) {
	settings := []samplingParams{
		{},
		{repetition: 1.3, frequency: 0.4, presence: 0.2},
		{temperature: 0.8},
		{temperature: 1, topK: 40},
		{temperature: 1, topK: 2000},
		{temperature: 1, topP: 0.9},
		{temperature: 0.7, topP: 0.999},
		{temperature: 1, topK: 40, topP: 0.95},
		{temperature: 1.5, minP: 0.05},
		{temperature: 0.8, topK: 50, topP: 0.9, minP: 0.01, repetition: 1.1, frequency: 0.3, presence: -0.5},
		{temperature: 1e-3},
	}
	vocabs := []int{1, 63, 64, 1000, 4099, 151669}
	steps := 40
	if testing.Short() {
		steps = 8
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, vocab := range vocabs {
		steps := steps
		if vocab > 10000 { // the full-size vocabulary: every shape once
			steps = 9
		}
		logits := make([]float32, vocab)
		mask := make([]uint64, (vocab+63)/64)
		for si, p := range settings {
			seed := uint64(100 + si)
			s := newSampler(vocab)
			s.start(p, seed, []int32{0, int32(vocab / 2)})
			ref := newReferenceSampler(s, seed)
			for step := range steps {
				referenceLogits(r, logits, step%7)
				constrained := referenceMask(r, mask, vocab, (step/7+step)%9)
				var got, want int32
				var gotOK, wantOK bool
				if constrained {
					buf := s.maskBuf()
					copy(buf, mask)
					got, gotOK = s.sampleMasked(logits, buf)
					want, wantOK = ref.sampleMasked(logits, mask)
				} else {
					got, gotOK = s.sample(logits), true
					want, wantOK = ref.sample(logits), true
				}
				if got != want || gotOK != wantOK {
					t.Fatalf("vocab %d, %+v, step %d (logits %d, mask %d): got %d %v, reference %d %v",
						vocab, p, step, step%7, (step/7+step)%9, got, gotOK, want, wantOK)
				}
				if gotOK {
					s.accept(got)
				}
			}
		}
	}
}

// TestDrawSkipAgreesWithWalk aims the draw's random value at the
// boundaries between tokens, where rounding decides: wherever skip
// answers, it must answer what the walk does, and at the boundaries it
// must decline (so draw walks).
func TestDrawSkipAgreesWithWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	declined, answered := 0, 0
	for trial := range 150 {
		n := 1 + r.IntN(3000)
		w := make([]float64, n)
		for i := range w {
			switch r.IntN(6) {
			case 0:
				w[i] = 0
			case 1:
				w[i] = math.Exp(-40 + 1e-9) // the smallest weight kept
			case 2:
				w[i] = 1
			default:
				w[i] = r.Float64()
			}
		}
		thr := 0.0
		if trial%3 == 0 {
			thr = r.Float64() * 0.5
		}
		mass, sums := 0.0, []float64(nil)
		for lo := 0; lo < n; lo += drawBlock {
			for _, e := range w[lo:min(lo+drawBlock, n)] {
				if e >= thr && (thr > 0 || e > 0) {
					mass += e
				}
			}
			sums = append(sums, mass)
		}
		// Boundaries: the walk's own remainders, and values next to them.
		var targets []float64
		acc := 0.0
		for _, e := range w {
			if e > 0 && e >= thr {
				acc += e
				targets = append(targets, acc, math.Nextafter(acc, 0), math.Nextafter(acc, math.Inf(1)))
			}
		}
		for range 20 {
			targets = append(targets, r.Float64()*mass)
		}
		for _, x := range targets {
			if x < 0 || x >= mass {
				continue
			}
			want := walk(w, thr, x)
			got, ok := skip(w, thr, x, mass, sums)
			if !ok {
				declined++
				continue
			}
			answered++
			if got != want {
				t.Fatalf("trial %d: r=%v of mass %v: skip %d, walk %d", trial, x, mass, got, want)
			}
		}
	}
	if declined == 0 || answered == 0 {
		t.Errorf("skip answered %d and declined %d: the test does not reach both", answered, declined)
	}
	t.Logf("skip answered %d, declined %d", answered, declined)
}

// BenchmarkSamplerMasked compares, side by side, the sampler and the
// reference over the 151,669 ids of Qwen's vocabulary at temperature 0.8:
// unconstrained, under a dense mask (a JSON string's content: about 97 %
// allowed) and under a sparse one (JSON's structure: 20 ids).
func BenchmarkSamplerMasked(b *testing.B) {
	const vocab = 151669
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	dense := make([]uint64, (vocab+63)/64)
	referenceMask(r, dense, vocab, 4)
	sparse := make([]uint64, (vocab+63)/64)
	for range 20 {
		i := r.IntN(vocab)
		sparse[i>>6] |= 1 << (i & 63)
	}
	for _, p := range []struct {
		name string
		p    samplingParams
	}{{"t0.8", samplingParams{temperature: 0.8}}, {"topk40_topp0.95", samplingParams{temperature: 0.8, topK: 40, topP: 0.95}}} {
		for _, m := range []struct {
			name string
			mask []uint64
		}{{"free", nil}, {"dense", dense}, {"sparse", sparse}} {
			for _, impl := range []string{"reference", "sampler"} {
				b.Run(p.name+"/"+m.name+"/"+impl, func(b *testing.B) {
					s := newSampler(vocab)
					s.start(p.p, 3, nil)
					ref := newReferenceSampler(s, 3)
					s.maskBuf() // the buffers a constrained request allocates once
					b.ReportAllocs()
					for b.Loop() {
						switch {
						case m.mask == nil && impl == "reference":
							ref.sample(logits)
						case m.mask == nil:
							s.sample(logits)
						case impl == "reference":
							ref.sampleMasked(logits, m.mask)
						default:
							buf := s.maskBuf()
							copy(buf, m.mask)
							s.sampleMasked(logits, buf)
						}
					}
				})
			}
		}
	}
}
