package engine

import "testing"

func TestLoopDetector(t *testing.T) {
	g := LoopGuard{MaxPeriod: 8, MinRepeats: 4, MinSpan: 12}
	cycle := func(period, n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(100 + i%period)
		}
		return out
	}
	cases := []struct {
		name   string
		seq    []int32
		fireAt int // index at which the guard fires, -1 for never
		period int
	}{
		{"one token repeated fires after MinSpan", cycle(1, 20), 11, 1},
		{"period 2 needs MinSpan", cycle(2, 20), 11, 2},
		{"period 5 needs 4 repeats", cycle(5, 30), 19, 5},
		{"period beyond MaxPeriod never fires", cycle(9, 60), -1, 0},
		{"distinct tokens never fire", func() []int32 {
			s := make([]int32, 50)
			for i := range s {
				s[i] = int32(i)
			}
			return s
		}(), -1, 0},
		{"a cycle after free text", append([]int32{1, 2, 3, 4, 5, 6, 7}, cycle(3, 20)...), 7 + 11, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newLoopDetector(g, 4096)
			for i := range c.seq {
				if p := d.push(c.seq[:i+1]); p > 0 {
					if i != c.fireAt || p != c.period {
						t.Fatalf("fired at %d with period %d, want at %d with period %d", i, p, c.fireAt, c.period)
					}
					return
				}
			}
			if c.fireAt >= 0 {
				t.Fatalf("never fired, want at %d", c.fireAt)
			}
		})
	}
	d := newLoopDetector(LoopGuard{Off: true}, 4096)
	if d.push(cycle(1, 100)) != 0 {
		t.Error("a disabled guard fired")
	}
}

// Long cycles — a tool call or a paragraph written again and again — are
// found through their k-grams at bounded work per token, at the same
// token an exact check of every period would fire.
func TestLoopDetectorLongPeriods(t *testing.T) {
	g := DefaultLoopGuard()
	// block is a stretch of distinct tokens; inner repeats a 20-token
	// chunk inside the cycle, so its k-grams also propose a wrong period.
	block := func(n, base int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(base + i)
		}
		return out
	}
	repeat := func(cycle []int32, n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = cycle[i%len(cycle)]
		}
		return out
	}
	inner := append(append(append(block(20, 1000), block(60, 2000)...), block(20, 1000)...), block(50, 3000)...)
	free := block(500, 50000)
	cases := []struct {
		name   string
		seq    []int32
		fireAt int
		period int
		late   int // tokens the k-gram search may fire after fireAt
	}{
		{"97-token call, 8 repeats", repeat(block(97, 100), 2000), 8*97 - 1, 97, 0},
		{"300 tokens, 4 repeats", repeat(block(300, 100), 3000), 4*300 - 1, 300, 0},
		{"1000 tokens, 3 repeats", repeat(block(1000, 100), 4000), 3*1000 - 1, 1000, 0},
		{"a cycle with a repeated chunk inside", repeat(inner, 2000), 7*150 - 1, 150, gram},
		{"after free text", append(append([]int32{}, free...), repeat(block(200, 100), 2000)...), 500 + 6*200 - 1, 200, 0},
		{"beyond MaxPeriod", repeat(block(1025, 100), 4000), -1, 0, 0},
		{"one repeat of a long block is no loop", append(append(block(400, 100), block(400, 100)...), block(2000, 9000)...), -1, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newLoopDetector(g, 32768)
			for i := range c.seq {
				if p := d.push(c.seq[:i+1]); p > 0 {
					if i < c.fireAt || i > c.fireAt+c.late || p != c.period {
						t.Fatalf("fired at %d with period %d, want at %d with period %d", i, p, c.fireAt, c.period)
					}
					return
				}
			}
			if c.fireAt >= 0 {
				t.Fatalf("never fired, want at %d", c.fireAt)
			}
		})
	}
	// A window too small for two periods does not look for them.
	d := newLoopDetector(g, 1000)
	seq := repeat(block(600, 100), 3000)
	for i := range seq {
		if p := d.push(seq[:i+1]); p > 0 {
			t.Fatalf("period %d fired in a 1000-token window", p)
		}
	}
}

// BenchmarkLoopDetector is the guard's cost per token on text with no
// cycle: the old default (periods up to 64, all exact) beside the new one
// (up to 1,024).
func BenchmarkLoopDetector(b *testing.B) {
	seq := make([]int32, 8192)
	x := uint32(1)
	for i := range seq {
		x = x*1664525 + 1013904223
		seq[i] = int32(x >> 16 % 32000)
	}
	for _, g := range []struct {
		name  string
		guard LoopGuard
	}{{"max-period=64", LoopGuard{MaxPeriod: 64, MinRepeats: 8, MinSpan: 64}}, {"max-period=1024", DefaultLoopGuard()}} {
		b.Run(g.name, func(b *testing.B) {
			d := newLoopDetector(g.guard, 32768)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == len(seq) {
					d.reset()
					i = 0
				}
				i++
				d.push(seq[:i])
			}
		})
	}
}
