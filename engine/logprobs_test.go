package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refLogSoftmax is the float64 log-softmax, computed the naive way.
func refLogSoftmax(logits []float32) []float64 {
	sum := 0.0
	m := math.Inf(-1)
	for _, x := range logits {
		if float64(x) > m {
			m = float64(x)
		}
	}
	for _, x := range logits {
		if x == x {
			sum += math.Exp(float64(x) - m)
		}
	}
	out := make([]float64, len(logits))
	for i, x := range logits {
		out[i] = float64(x) - m - math.Log(sum)
		if x != x {
			out[i] = math.Inf(-1)
		}
	}
	return out
}

// refTop sorts every id by log-probability, then by id.
func refTop(lp []float64, k int) []int32 {
	ids := make([]int32, len(lp))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortStableFunc(ids, func(a, b int32) int {
		switch {
		case float32(lp[a]) > float32(lp[b]):
			return -1
		case float32(lp[a]) < float32(lp[b]):
			return 1
		}
		return int(a - b)
	})
	return ids[:min(k, len(ids))]
}

func TestLogSoftmaxMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, vocab := range []int{1, 5, 19, 20, 21, 1000, 151669} {
		logits := make([]float32, vocab)
		for i := range logits {
			logits[i] = float32(r.NormFloat64() * 4)
		}
		if vocab > 10 {
			// Ties: equal logits must come out by lower id.
			logits[vocab-1], logits[vocab/2], logits[3] = 25, 25, 25
		}
		want := refLogSoftmax(logits)
		for _, k := range []int{0, 1, 5, 20} {
			top := make([]TokenLogprob, k)
			id := int32(vocab / 3)
			lp, n := logSoftmax(logits, id, top)
			if math.Abs(float64(lp)-want[id]) > 1e-5 {
				t.Errorf("vocab %d: logprob of %d = %v, want %v", vocab, id, lp, want[id])
			}
			if n != min(k, vocab) {
				t.Fatalf("vocab %d, k %d: %d entries", vocab, k, n)
			}
			wantIDs := refTop(want, k)
			for j := range top[:n] {
				if top[j].ID != wantIDs[j] {
					t.Fatalf("vocab %d, k %d: top %v, want ids %v", vocab, k, top[:n], wantIDs)
				}
				if d := math.Abs(float64(top[j].Logprob) - want[top[j].ID]); d > 1e-5 {
					t.Errorf("vocab %d: top[%d] logprob %v, want %v", vocab, j, top[j].Logprob, want[top[j].ID])
				}
			}
		}
	}
}

func TestLogSoftmaxEdgeCases(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	top := make([]TokenLogprob, 3)
	lp, n := logSoftmax([]float32{nan, 0, float32(math.Inf(-1)), 0}, 1, top)
	if math.Abs(float64(lp)-math.Log(0.5)) > 1e-6 || n != 3 || top[0].ID != 1 || top[1].ID != 3 || !math.IsInf(float64(top[2].Logprob), -1) {
		t.Errorf("NaN and -Inf logits: lp %v, top %v", lp, top[:n])
	}
	lp, n = logSoftmax([]float32{1, inf, 2, inf}, 3, top)
	if math.Abs(float64(lp)-math.Log(0.5)) > 1e-6 || top[0].ID != 1 || top[1].ID != 3 || !math.IsInf(float64(top[2].Logprob), -1) || n != 3 {
		t.Errorf("+Inf logits: lp %v, top %v", lp, top[:n])
	}
	if lp, _ := logSoftmax([]float32{1, 2}, 7, nil); !math.IsInf(float64(lp), -1) {
		t.Errorf("id outside the logits: %v", lp)
	}
	// Huge logits do not overflow: the softmax is relative to the largest.
	if lp, _ := logSoftmax([]float32{3e38, 3e38}, 0, nil); math.Abs(float64(lp)-math.Log(0.5)) > 1e-6 {
		t.Errorf("huge logits: %v", lp)
	}
}

func BenchmarkLogSoftmax(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 151669)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	for _, k := range []int{0, 5, 20} {
		top := make([]TokenLogprob, k)
		b.Run("top"+itoa(k), func(b *testing.B) {
			for range b.N {
				logSoftmax(logits, 7, top)
			}
		})
	}
}

func itoa(k int) string {
	if k < 10 {
		return string(rune('0' + k))
	}
	return string(rune('0'+k/10)) + string(rune('0'+k%10))
}
