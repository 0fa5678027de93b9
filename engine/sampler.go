package engine

import (
	"math"
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
	pcg     *rand.PCG
	rng     *rand.Rand
}

func newSampler(vocab int) *sampler {
	pcg := rand.NewPCG(1, 2)
	return &sampler{
		weights: make([]float64, vocab),
		idx:     make([]int32, 0, vocab),
		counts:  make([]int32, vocab),
		seen:    make([]bool, vocab),
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

// sample returns the next token id. logits must have one value per
// vocabulary entry.
func (s *sampler) sample(logits []float32) int32 {
	n := min(len(logits), len(s.weights))
	logits = logits[:n]
	penalised := s.p.penalised()
	if s.p.temperature == 0 {
		best, bestV := 0, math.Inf(-1)
		for i, l := range logits {
			v := float64(l)
			if penalised && s.seen[i] {
				v = s.adjust(i, v)
			}
			if v > bestV {
				best, bestV = i, v
			}
		}
		return int32(best)
	}

	w := s.weights[:n]
	invT := 1 / s.p.temperature
	maxV := math.Inf(-1)
	for i, l := range logits {
		v := float64(l)
		if penalised && s.seen[i] {
			v = s.adjust(i, v)
		}
		v *= invT
		w[i] = v
		if v > maxV {
			maxV = v
		}
	}
	if math.IsInf(maxV, -1) || math.IsNaN(maxV) {
		return 0
	}
	total := 0.0
	for i, v := range w {
		// Weights are relative to the best token's (1). Below e^-40 a
		// token cannot matter next to it, so exp is skipped.
		e := 0.0
		if d := v - maxV; d > -40 {
			e = math.Exp(d)
		}
		w[i] = e
		total += e
	}

	useK := s.p.topK > 0 && s.p.topK < n
	useP := s.p.topP > 0 && s.p.topP < 1
	if !useK && !useP && s.p.minP == 0 {
		return s.draw(w, total)
	}

	// Find a weight threshold t so that the tokens at or above it surely
	// contain the answer: at least top_k of them, and together at least
	// top_p of the mass. Only those are sorted, which keeps a 150k
	// vocabulary cheap. min_p is a threshold of its own (weights are
	// relative to the best token), so it only raises t.
	t := 1e-2
	for {
		count, mass := 0, 0.0
		for _, e := range w {
			if e >= t {
				count++
				mass += e
			}
		}
		if (!useK || count >= s.p.topK) && (!useP || mass >= s.p.topP*total) {
			break
		}
		if t < 1e-300 {
			t = 0
			break
		}
		t *= 1.0 / 64
	}
	if s.p.minP > t {
		t = s.p.minP
	}
	idx := s.idx[:0]
	for i, e := range w {
		if e >= t {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int {
		switch wa, wb := w[a], w[b]; {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		}
		return int(a - b)
	})
	if useK && len(idx) > s.p.topK {
		idx = idx[:s.p.topK]
	}
	if useP {
		kept := 0.0
		if useK {
			for _, id := range idx {
				kept += w[id]
			}
		} else {
			kept = total
		}
		cum, cut := 0.0, len(idx)
		for i, id := range idx {
			cum += w[id]
			if cum >= s.p.topP*kept {
				cut = i + 1
				break
			}
		}
		idx = idx[:cut]
	}
	if s.p.minP > 0 {
		cut := len(idx)
		for i, id := range idx {
			if w[id] < s.p.minP {
				cut = i
				break
			}
		}
		idx = idx[:max(cut, 1)]
	}
	s.idx = idx
	mass := 0.0
	for _, id := range idx {
		mass += w[id]
	}
	r := s.rng.Float64() * mass
	for _, id := range idx {
		r -= w[id]
		if r < 0 {
			return id
		}
	}
	return idx[len(idx)-1]
}

// draw samples from the whole distribution w (unnormalised, summing to total).
func (s *sampler) draw(w []float64, total float64) int32 {
	r := s.rng.Float64() * total
	last := 0
	for i, e := range w {
		if e > 0 {
			last = i
		}
		r -= e
		if r < 0 {
			return int32(i)
		}
	}
	return int32(last)
}
