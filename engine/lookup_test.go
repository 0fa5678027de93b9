package engine

import (
	"slices"
	"testing"
	"time"
)

// checkDraft checks a draft of k tokens (or none) against the history: it
// must continue an earlier occurrence of the history's last n-gram for
// some n in [lookupMinN, lookupMaxN], and be empty only when no such
// n-gram occurred before (hash slots may lose one, so an empty draft is
// allowed, but never a wrong one).
func checkDraft(t *testing.T, h, draft []int32, k int) {
	t.Helper()
	if len(draft) != k && len(draft) != 0 {
		t.Fatalf("draft of %d tokens, asked for %d", len(draft), k)
	}
	if len(draft) == 0 {
		return
	}
	last := len(h) - 1
	for n := lookupMinN; n <= lookupMaxN && n <= last; n++ {
		for e := n - 1; e < last; e++ {
			// The continuation, read on into the draft past the history.
			ext := slices.Concat(h, draft)
			if slices.Equal(h[e-n+1:e+1], h[last-n+1:]) && slices.Equal(ext[e+1:e+1+len(draft)], draft) {
				return
			}
		}
	}
	t.Fatalf("draft %v continues no earlier n-gram of the history's end %v", draft, h[max(0, last-lookupMaxN+1):])
}

func TestDrafter(t *testing.T) {
	d := newDrafter()
	d.reset([]int32{1, 2, 3, 4, 5, 9, 1, 2})
	if got := d.draft(nil, 3); !slices.Equal(got, []int32{3, 4, 5}) {
		t.Errorf("draft after 1 2 = %v, want 3 4 5", got)
	}
	d.push(3)
	d.push(7)
	d.push(2)
	d.push(3)
	// "7 2 3" did not occur before; "2 3" did, twice, and the newest
	// occurrence (followed by 7 2) wins.
	if got := d.draft(nil, 2); !slices.Equal(got, []int32{7, 2}) {
		t.Errorf("draft after ... 2 3 = %v, want 7 2 (the newest occurrence)", got)
	}
	// A loop's draft reads on into itself: 7 2 3 | 7 2 3 7 ...
	if got := d.draft(nil, 5); !slices.Equal(got, []int32{7, 2, 3, 7, 2}) {
		t.Errorf("draft after the loop 7 2 3 = %v, want 7 2 3 7 2", got)
	}
	d.reset([]int32{5, 6, 7})
	if got := d.draft(nil, 4); len(got) != 0 {
		t.Errorf("nothing repeats, drafted %v", got)
	}
	if got := d.draft(nil, 0); len(got) != 0 {
		t.Errorf("k 0 drafted %v", got)
	}
}

func TestDraftPolicy(t *testing.T) {
	var p draftPolicy
	p.reset()
	if p.want() != specStartK {
		t.Fatalf("start k %d", p.want())
	}
	p.update(4, 4)
	if p.want() != 8 {
		t.Errorf("after a whole accept k = %d, want 8", p.k)
	}
	p.update(8, 8)
	if p.k != specMaxK {
		t.Errorf("k = %d, want the cap %d", p.k, specMaxK)
	}
	p.update(8, 3)
	if p.k != 4 {
		t.Errorf("after 3 of 8 accepted k = %d, want 4", p.k)
	}
	for i, pause := range []int{1, 2, 4, 8, 16, 32, 64, 64} {
		p.update(1, 0)
		for range pause {
			if p.want() != 0 {
				t.Fatalf("miss %d: drafting before the pause of %d ended", i+1, pause)
			}
		}
		if p.want() != 1 {
			t.Fatalf("miss %d: no draft after the pause of %d", i+1, pause)
		}
	}
}

// FuzzDrafter: whatever the history and however it grows, a draft is
// short enough and continues an earlier occurrence of the last n-gram.
func FuzzDrafter(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 2}, uint8(3), uint8(4))
	f.Add([]byte{7, 7, 7, 7, 7, 7}, uint8(2), uint8(8))
	f.Add([]byte("the cat sat on the mat, the cat"), uint8(10), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, split, k uint8) {
		h := make([]int32, len(data))
		for i, b := range data {
			h[i] = int32(b % 16) // a small alphabet, so n-grams repeat
		}
		cut := min(int(split), len(h))
		d := newDrafter()
		d.reset(h[:cut])
		for i := cut; ; i++ {
			got := d.draft(nil, int(k%12))
			checkDraft(t, d.hist, got, int(k%12))
			if i == len(h) {
				break
			}
			d.push(h[i])
		}
	})
}

func TestDraftPolicySkip(t *testing.T) {
	var p draftPolicy
	p.reset()
	for i, pause := range []int{1, 2, 4, 8, 16, 32, 64} {
		if p.skip() != 0 {
			t.Fatalf("skip %d drafted", i+1)
		}
		for range pause {
			if p.want() != 0 {
				t.Fatalf("skip %d: drafting before the pause of %d ended", i+1, pause)
			}
		}
		if p.want() == 0 {
			t.Fatalf("skip %d: still paused after %d", i+1, pause)
		}
	}
	if p.skip() != 1 {
		t.Fatal("at the longest pause skip does not try a one-token draft")
	}
	p.update(1, 0)
	if p.pause != specMaxPause {
		t.Errorf("a rejected trial pauses %d, want %d", p.pause, specMaxPause)
	}
}

func TestStepCosts(t *testing.T) {
	var c stepCosts
	if got := c.best(8, 0.9); got != 8 {
		t.Errorf("nothing measured: best %d, want the policy's 8", got)
	}
	c.observe(1, 10*time.Millisecond)
	if got := c.best(8, 0.9); got != 8 {
		t.Errorf("only the one-token step measured: best %d, want 8 (longer drafts look free until measured)", got)
	}
	// Memory-bound: a 9-token step costs 20 % more than a one-token step.
	c.observe(9, 12*time.Millisecond)
	if got := c.estimate(5); got < 0.0109 || got > 0.0111 {
		t.Errorf("estimate(5) = %v, want 11 ms between the measured 1 and 9", got)
	}
	if got := c.best(8, 0.9); got != 8 {
		t.Errorf("cheap verify steps: best %d, want 8", got)
	}
	// Compute-bound: each row costs as much as a whole one-token step.
	var d stepCosts
	d.observe(1, 10*time.Millisecond)
	d.observe(2, 20*time.Millisecond)
	if got := d.estimate(5); got < 0.0499 || got > 0.0501 {
		t.Errorf("extrapolated estimate(5) = %v, want 50 ms", got)
	}
	if got := d.best(8, 0.9); got != 0 {
		t.Errorf("a row costs a step: best %d, want 0 (no draft pays)", got)
	}
	if got := c.best(8, 0.1); got != 1 {
		t.Errorf("cheap verify steps, rate 0.1: best %d, want 1", got)
	}
	var f stepCosts
	f.observe(1, 10*time.Millisecond)
	f.observe(2, 13*time.Millisecond)
	if got := f.best(8, 0.2); got != 0 {
		t.Errorf("a row at 3/10 of a step, rate 0.2: best %d, want 0", got)
	}
	// A middling cost picks a middling draft.
	var m stepCosts
	m.observe(1, 10*time.Millisecond)
	m.observe(9, 40*time.Millisecond)
	if got := m.best(8, 0.93); got < 2 || got > 6 {
		t.Errorf("rows at 3/8 of a step, rate 0.93: best %d, want a middling draft", got)
	}
}
