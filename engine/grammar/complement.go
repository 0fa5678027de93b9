package grammar

import (
	"slices"
	"strconv"
	"strings"
)

// maxComplement bounds the states of a determinised automaton; past it
// the complement is refused.
const maxComplement = 1 << 12

// complement returns an automaton of the strings the fragment f of a
// does not match: a's subset construction over character ranges, with a
// dead state for the characters no edge takes, and the accepting states
// flipped. ok is false past maxComplement states.
func complement(a *cnfa, f frag) (*cnfa, frag, bool) {
	cl := closures(a)
	d := &cnfa{}
	index := map[string]int32{}
	var sets [][]int32
	key := func(set []int32) string {
		var b strings.Builder
		for _, x := range set {
			b.WriteString(strconv.Itoa(int(x)))
			b.WriteByte(',')
		}
		return b.String()
	}
	get := func(set []int32) (int32, bool) {
		k := key(set)
		if id, ok := index[k]; ok {
			return id, true
		}
		if len(sets) >= maxComplement {
			return -1, false
		}
		id := d.add()
		index[k] = id
		sets = append(sets, set)
		return id, true
	}
	closure := func(xs []int32) []int32 {
		var out []int32
		for _, x := range xs {
			for _, y := range cl(x) {
				if !slices.Contains(out, y) {
					out = append(out, y)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	dead, exit := d.add(), d.add()
	d.char(dead, allRunes, dead)
	d.eps(dead, exit)
	in, _ := get(closure([]int32{f.in}))
	for i := 0; i < len(sets); i++ {
		set := sets[i]
		id := int32(i) + 2 // dead and exit come first
		if !slices.Contains(set, f.out) {
			d.eps(id, exit)
		}
		var edges []cedge
		var cuts []rune
		for _, x := range set {
			for _, e := range a.st[x].chars {
				edges = append(edges, e)
				for _, r := range e.set {
					cuts = append(cuts, r[0], r[1]+1)
				}
			}
		}
		cuts = append(cuts, 0, allRunes[0][1]+1)
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		var targets []int32
		var tsets []runeSet
		for j := 0; j+1 < len(cuts); j++ {
			lo, hi := cuts[j], cuts[j+1]-1
			var to []int32
			for _, e := range edges {
				if e.set.has(lo) {
					to = append(to, e.to)
				}
			}
			t := dead
			if len(to) > 0 {
				var ok bool
				if t, ok = get(closure(to)); !ok {
					return nil, frag{}, false
				}
			}
			k := slices.Index(targets, t)
			if k < 0 {
				targets, tsets = append(targets, t), append(tsets, nil)
				k = len(targets) - 1
			}
			tsets[k] = append(tsets[k], [2]rune{lo, hi})
		}
		for k, t := range targets {
			d.char(id, tsets[k].normalize(), t)
		}
	}
	return d.freeze(), frag{in, exit}, true
}

// empty reports whether the fragment f of a matches no string.
func (a *cnfa) empty(f frag) bool {
	seen := make([]bool, len(a.st))
	stack := []int32{f.in}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == f.out {
			return false
		}
		if seen[x] {
			continue
		}
		seen[x] = true
		stack = append(stack, a.st[x].eps...)
		for _, e := range a.st[x].chars {
			if len(e.set) > 0 {
				stack = append(stack, e.to)
			}
		}
	}
	return true
}
