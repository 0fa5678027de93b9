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
