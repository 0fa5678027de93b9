package engine

import (
	"math"
	"testing"
)

func probsToLogits(ps ...float64) []float32 {
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = float32(math.Log(p))
	}
	return out
}

func TestSamplerGreedyAndPenalties(t *testing.T) {
	logits := []float32{1, 3, 2.5, -1}
	cases := []struct {
		name   string
		p      samplingParams
		prompt []int32
		gen    []int32
		want   int32
	}{
		{"argmax", samplingParams{}, nil, nil, 1},
		{"repetition over the prompt", samplingParams{repetition: 1.5}, []int32{1}, nil, 2},
		{"repetition over generated", samplingParams{repetition: 1.5}, nil, []int32{1}, 2},
		{"repetition 1 is off", samplingParams{repetition: 1}, []int32{1}, nil, 1},
		{"frequency counts repeats", samplingParams{frequency: 0.3}, nil, []int32{1}, 1},
		{"frequency twice", samplingParams{frequency: 0.3}, nil, []int32{1, 1}, 2},
		{"presence once", samplingParams{presence: 0.6}, nil, []int32{1, 1, 1}, 2},
		{"prompt does not count for frequency", samplingParams{frequency: 2}, []int32{1, 1}, nil, 1},
		{"negative logits get more negative", samplingParams{repetition: 2}, []int32{3}, nil, 1},
		{"negative presence favours repeats", samplingParams{presence: -2}, nil, []int32{0}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSampler(len(logits))
			s.start(c.p, 1, c.prompt)
			for _, id := range c.gen {
				s.accept(id)
			}
			if got := s.sample(logits); got != c.want {
				t.Errorf("sample = %d, want %d", got, c.want)
			}
		})
	}
}

func TestSamplerFiltersAndDistribution(t *testing.T) {
	logits := probsToLogits(0.5, 0.3, 0.15, 0.05)
	cases := []struct {
		name string
		p    samplingParams
		want []float64 // expected frequencies
	}{
		{"temperature 1", samplingParams{temperature: 1}, []float64{0.5, 0.3, 0.15, 0.05}},
		{"top_k 2", samplingParams{temperature: 1, topK: 2}, []float64{0.625, 0.375, 0, 0}},
		{"top_k 1 is greedy", samplingParams{temperature: 1, topK: 1}, []float64{1, 0, 0, 0}},
		{"top_p 0.6", samplingParams{temperature: 1, topP: 0.6}, []float64{0.625, 0.375, 0, 0}},
		{"top_p 0.9", samplingParams{temperature: 1, topP: 0.9}, []float64{0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}},
		{"top_k then top_p", samplingParams{temperature: 1, topK: 2, topP: 0.5}, []float64{1, 0, 0, 0}},
		{"min_p 0.5", samplingParams{temperature: 1, minP: 0.5}, []float64{0.625, 0.375, 0, 0}},
		{"min_p 0.2", samplingParams{temperature: 1, minP: 0.2}, []float64{0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}},
		{"low temperature sharpens", samplingParams{temperature: 0.5}, sharpen([]float64{0.5, 0.3, 0.15, 0.05}, 2)},
	}
	const draws = 40000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSampler(len(logits))
			s.start(c.p, 7, nil)
			counts := make([]float64, len(logits))
			for range draws {
				counts[s.sample(logits)]++
			}
			for i, want := range c.want {
				got := counts[i] / draws
				if math.Abs(got-want) > 0.015 || (want == 0 && got != 0) {
					t.Errorf("token %d: frequency %.4f, want %.4f (all %v)", i, got, want, counts)
				}
			}
		})
	}
}

func sharpen(p []float64, power float64) []float64 {
	out := make([]float64, len(p))
	sum := 0.0
	for i, v := range p {
		out[i] = math.Pow(v, power)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

func TestSamplerSeedReproducible(t *testing.T) {
	logits := probsToLogits(0.2, 0.2, 0.2, 0.2, 0.2)
	run := func(seed uint64) []int32 {
		s := newSampler(len(logits))
		s.start(samplingParams{temperature: 1, topP: 0.99}, seed, nil)
		out := make([]int32, 32)
		for i := range out {
			out[i] = s.sample(logits)
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	if !equalIDs(a, b) {
		t.Errorf("same seed, different draws: %v vs %v", a, b)
	}
	if equalIDs(a, c) {
		t.Errorf("different seeds, same 32 draws: %v", a)
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A large vocabulary with a long flat tail must still sample without
// allocating (BenchmarkSampler uses the 151,669 entries of Qwen's).
func TestSamplerDoesNotAllocate(t *testing.T) {
	const vocab = 20000
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i))) * 4
	}
	for _, p := range []samplingParams{
		{},
		{temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repetition: 1.1, frequency: 0.2, presence: 0.1},
		{temperature: 1, topP: 0.9},
		{temperature: 1},
	} {
		s := newSampler(vocab)
		s.start(p, 3, []int32{1, 2, 3})
		n := testing.AllocsPerRun(10, func() { s.accept(s.sample(logits)) })
		if n != 0 {
			t.Errorf("%+v: %v allocations per sample", p, n)
		}
		// Constrained steps, dense (every third id barred) and sparse (one
		// id in a hundred allowed), once the buffers exist.
		s.maskBuf()
		for _, every := range []int{-3, 100} {
			n := testing.AllocsPerRun(10, func() {
				mask := s.maskBuf()
				for i := range vocab {
					if (every < 0 && i%-every != 0) || (every > 0 && i%every == 0) {
						mask[i>>6] |= 1 << (i & 63)
					}
				}
				id, _ := s.sampleMasked(logits, mask)
				s.accept(id)
			})
			if n != 0 {
				t.Errorf("%+v, mask %d: %v allocations per sample", p, every, n)
			}
		}
	}
}

func BenchmarkSampler(b *testing.B) {
	const vocab = 151669
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i))) * 4
	}
	for _, c := range []struct {
		name string
		p    samplingParams
	}{
		{"greedy", samplingParams{}},
		{"greedy+penalties", samplingParams{repetition: 1.1, frequency: 0.2}},
		{"temperature", samplingParams{temperature: 0.8}},
		{"top_k40+top_p0.95", samplingParams{temperature: 0.8, topK: 40, topP: 0.95}},
		{"top_p0.9", samplingParams{temperature: 1, topP: 0.9}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newSampler(vocab)
			s.start(c.p, 3, nil)
			b.ReportAllocs()
			for b.Loop() {
				s.accept(s.sample(logits))
			}
		})
	}
}

func TestWeightKeyCoversTheWeightRange(t *testing.T) {
	lo, hi := weightKey(math.Exp(-40+1e-9)), weightKey(1)
	if lo < 0 || hi >= histSize || lo > hi {
		t.Fatalf("keys span [%d, %d], want inside [0, %d)", lo, hi, histSize)
	}
	prev := -1
	for d := -40.0 + 1e-9; d <= 0; d += 0.01 {
		k := weightKey(math.Exp(d))
		if k < prev {
			t.Fatalf("weightKey not monotone at e^%v", d)
		}
		prev = k
	}
}

// Ties and flat distributions: top_k keeps exactly the k best, top_p on a
// flat distribution keeps about p of the vocabulary.
func TestSamplerFlatDistribution(t *testing.T) {
	const vocab = 2000
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(i) * 1e-6 // nearly flat, strictly increasing
	}
	s := newSampler(vocab)
	s.start(samplingParams{temperature: 1, topK: 50}, 9, nil)
	for range 500 {
		if id := s.sample(logits); id < vocab-50 {
			t.Fatalf("top_k 50 sampled id %d", id)
		}
	}
	s.start(samplingParams{temperature: 1, topP: 0.5}, 9, nil)
	lowest := int32(vocab)
	for range 1000 {
		lowest = min(lowest, s.sample(logits))
	}
	if lowest < vocab*45/100 || lowest > vocab*55/100 {
		t.Errorf("top_p 0.5 over a flat distribution reached down to id %d, want about %d", lowest, vocab/2)
	}
}

// FuzzSampler feeds arbitrary logits (NaN and infinities included) and
// parameters: the sampler must return an id inside the vocabulary, and the
// best token whenever the parameters leave only one choice.
func FuzzSampler(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 5}, 0.0, 0, 0.0, 0.0, 1.0, uint64(1))
	f.Add([]byte{9, 9, 9, 9}, 1.0, 2, 0.5, 0.1, 1.3, uint64(2))
	f.Add([]byte{0, 255, 128, 7, 7, 7}, 0.7, 0, 0.9, 0.0, 0.0, uint64(3))
	f.Fuzz(func(t *testing.T, raw []byte, temp float64, topK int, topP, minP, rep float64, seed uint64) {
		if len(raw) == 0 || len(raw) > 4096 {
			return
		}
		logits := make([]float32, len(raw))
		for i, b := range raw {
			switch b {
			case 251:
				logits[i] = float32(math.NaN())
			case 252:
				logits[i] = float32(math.Inf(-1))
			default:
				logits[i] = float32(b)/16 - 8
			}
		}
		r := Request{Prompt: "x", Temperature: temp, TopK: topK, TopP: topP, MinP: minP, RepetitionPenalty: rep}
		if r.Validate() != nil {
			return
		}
		s := newSampler(len(logits))
		s.start(samplingParams{temperature: temp, topK: topK, topP: topP, minP: minP, repetition: rep}, seed, []int32{0})
		for range 3 {
			id := s.sample(logits)
			if id < 0 || int(id) >= len(logits) {
				t.Fatalf("id %d outside a vocabulary of %d", id, len(logits))
			}
			s.accept(id)
		}
		best := 0
		for i, l := range logits {
			if l > logits[best] || math.IsNaN(float64(logits[best])) {
				best = i
			}
		}
		s.start(samplingParams{temperature: max(temp, 0.1), topK: 1}, seed, nil)
		if id := s.sample(logits); logits[id] != logits[best] && !math.IsNaN(float64(logits[best])) {
			t.Fatalf("top_k 1 picked %d (%v), best is %d (%v)", id, logits[id], best, logits[best])
		}
	})
}

func TestExpNeg(t *testing.T) {
	worst := 0.0
	for x := -40.0 + 1e-9; x <= 0; x += 0.000731 {
		want := math.Exp(x)
		worst = max(worst, math.Abs(expNeg(x)-want)/want)
	}
	if worst > 1e-8 {
		t.Errorf("largest relative error %g, want below 1e-8", worst)
	}
	if expNeg(0) != 1 {
		t.Errorf("expNeg(0) = %v", expNeg(0))
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = -40 * float64(i) / float64(len(xs))
	}
	sum := 0.0
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sum += math.Exp(x)
			}
		}
	})
	b.Run("expNeg", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sum += expNeg(x)
			}
		}
	})
	_ = sum
}

// naiveArgmax is the value-by-value scan argmax must agree with.
func naiveArgmax(v []float32) int32 {
	best, top := 0, float32(math.Inf(-1))
	for i, x := range v {
		if x > top {
			best, top = i, x
		}
	}
	return int32(best)
}

func FuzzArgmax(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 5, 9, 9, 9, 9, 0, 255})
	f.Add([]byte{251, 251, 252, 7, 7, 7, 7, 7, 7, 7, 7, 7})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Fuzz(func(t *testing.T, raw []byte) {
		v := make([]float32, len(raw))
		for i, b := range raw {
			switch b {
			case 251:
				v[i] = float32(math.NaN())
			case 252:
				v[i] = float32(math.Inf(-1))
			case 253:
				v[i] = float32(math.Inf(1))
			default:
				v[i] = float32(b)/16 - 8
			}
		}
		if got, want := argmax(v), naiveArgmax(v); got != want {
			t.Fatalf("argmax(%v) = %d, want %d", v, got, want)
		}
	})
}

func BenchmarkArgmax(b *testing.B) {
	logits := make([]float32, 151669)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i))) * 4
	}
	for _, c := range []struct {
		name string
		f    func([]float32) int32
	}{{"blocked", argmax}, {"by-value", naiveArgmax}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f(logits)
			}
		})
	}
}
