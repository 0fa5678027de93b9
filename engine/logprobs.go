package engine

import "math"

// MaxTopLogprobs is the largest Request.TopLogprobs, as in the OpenAI API.
const MaxTopLogprobs = 20

// TokenLogprob is a token id and its log-probability.
type TokenLogprob struct {
	// ID is the token id.
	ID int32
	// Logprob is the natural logarithm of the token's probability; -Inf
	// for a token the model gives no chance (a logit of -Inf or NaN).
	Logprob float32
}

// logSoftmax reports the log-probability of id under softmax(logits) and
// fills top with the len(top) most likely ids, most likely first, equal
// log-probabilities by lower id. It returns how many entries of top it
// filled (fewer only when the vocabulary is smaller than top).
//
// It is the model's own distribution: the logits as the backend returned
// them, before any penalty, temperature, filter or constraint mask. The
// softmax is computed stably, relative to the largest logit, with the
// normaliser summed in float64: log p(x) = (x - max) - log Σ exp(l - max).
// NaN logits count as -Inf. Two passes over the logits: the largest ones,
// then the sum.
func logSoftmax(logits []float32, id int32, top []TokenLogprob) (float32, int) {
	k := len(top)
	n := 0 // filled entries of top, by logit descending; Logprob holds the logit until the end
	maxV := float32(math.Inf(-1))
	for i, x := range logits {
		if x > maxV {
			maxV = x
		}
		if n == k && !(k > 0 && x > top[k-1].Logprob) || x != x {
			continue // not among the largest so far: the common case
		}
		// Insert after every entry at least as large, so that among equal
		// logits the lower ids, scanned first, stay first. A full list
		// drops its last entry.
		j := min(n, k-1)
		for j > 0 && top[j-1].Logprob < x {
			top[j] = top[j-1]
			j--
		}
		top[j] = TokenLogprob{ID: int32(i), Logprob: x}
		if n < k {
			n++
		}
	}
	m, logSum := float64(maxV), logSumExp(logits, maxV)
	lp := func(x float32) float32 {
		switch {
		case x != x || math.IsInf(float64(x), -1):
			return float32(math.Inf(-1))
		case math.IsInf(m, 0):
			// A +Inf logit takes all the mass (shared by every +Inf).
			if math.IsInf(float64(x), 1) {
				return float32(-math.Log(float64(countInf(logits))))
			}
			return float32(math.Inf(-1))
		}
		return float32((float64(x) - m) - logSum)
	}
	for j := range top[:n] {
		top[j].Logprob = lp(top[j].Logprob)
	}
	// Rounding to float32 can make neighbouring entries equal: keep the
	// order by log-probability, then by id.
	for a := 1; a < n; a++ {
		for b := a; b > 0 && top[b-1].Logprob == top[b].Logprob && top[b-1].ID > top[b].ID; b-- {
			top[b-1], top[b] = top[b], top[b-1]
		}
	}
	if id < 0 || int(id) >= len(logits) {
		return float32(math.Inf(-1)), n
	}
	return lp(logits[id]), n
}

// logSumExp returns log Σ exp(l - max) over the logits (0 when max is
// infinite, where it is not used). Terms below e^-40 of the largest are
// skipped: over a 150k vocabulary they change the sum by less than 1e-11
// of it.
func logSumExp(logits []float32, maxV float32) float64 {
	m := float64(maxV)
	if math.IsInf(m, 0) {
		return 0
	}
	// Four sums, so that the additions of neighbouring terms do not wait
	// on each other.
	var s0, s1, s2, s3 float64
	term := func(x float32) float64 {
		if d := float64(x) - m; d > -40 {
			return expNeg(d)
		}
		return 0
	}
	i := 0
	for ; i+4 <= len(logits); i += 4 {
		v := logits[i : i+4 : i+4]
		s0 += term(v[0])
		s1 += term(v[1])
		s2 += term(v[2])
		s3 += term(v[3])
	}
	for ; i < len(logits); i++ {
		s0 += term(logits[i])
	}
	return math.Log((s0 + s1) + (s2 + s3))
}

func countInf(logits []float32) int {
	n := 0
	for _, x := range logits {
		if math.IsInf(float64(x), 1) {
			n++
		}
	}
	return n
}
