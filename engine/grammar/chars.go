package grammar

import (
	"math"
	"unicode/utf8"
)

// A pattern or a format is built first as a character automaton: states
// joined by epsilon moves and by edges that each take one code point of the
// decoded string from a set. That is the level JSON Schema counts lengths
// at (minLength and maxLength count code points, so an escape such as \n or
// \u0007 is one character however many bytes spell it), so length bounds
// and a second pattern are products taken here; spell then writes the
// result into the byte automaton, each edge one jsonChar. A character
// automaton spelled without a product has exactly the shape the byte
// automaton had when patterns were built into it directly.

type cedge struct {
	set runeSet
	to  int32
}

type cstate struct {
	eps   []int32
	chars []cedge
}

// cnfa is a character automaton. While it is built its edges are kept in
// two lists, in the order they were added; freeze then gives every state
// its edges (in that order) as slices of two shared arrays, so a pattern
// of thousands of states costs a handful of allocations. The products and
// spell read frozen automata only.
type cnfa struct {
	st       []cstate // nil until frozen
	states   int32    // states made
	epsList  [][2]int32
	charList []cfrom
	// weight estimates the byte states spell will make of it, for the
	// size limits.
	weight int
}

type cfrom struct {
	from int32
	e    cedge
}

func (a *cnfa) add() int32 {
	a.states++
	a.weight++
	return a.states - 1
}

func (a *cnfa) eps(x, y int32) { a.epsList = append(a.epsList, [2]int32{x, y}) }

func (a *cnfa) char(x int32, s runeSet, y int32) {
	a.charList = append(a.charList, cfrom{x, cedge{s, y}})
	a.weight += charCost(s)
}

// freeze gives each state its edges and returns a.
func (a *cnfa) freeze() *cnfa {
	a.st = make([]cstate, a.states)
	ne := make([]int32, len(a.st)+1)
	nc := make([]int32, len(a.st)+1)
	for _, e := range a.epsList {
		ne[e[0]+1]++
	}
	for _, e := range a.charList {
		nc[e.from+1]++
	}
	for i := range a.st {
		ne[i+1] += ne[i]
		nc[i+1] += nc[i]
	}
	eps := make([]int32, len(a.epsList))
	chars := make([]cedge, len(a.charList))
	fill := make([]int32, len(a.st))
	for _, e := range a.epsList {
		eps[ne[e[0]]+fill[e[0]]] = e[1]
		fill[e[0]]++
	}
	clear(fill)
	for _, e := range a.charList {
		chars[nc[e.from]+fill[e.from]] = e.e
		fill[e.from]++
	}
	for i := range a.st {
		a.st[i].eps = eps[ne[i]:ne[i+1]:ne[i+1]]
		a.st[i].chars = chars[nc[i]:nc[i+1]:nc[i+1]]
	}
	a.epsList, a.charList = nil, nil
	return a
}

// charCost estimates the byte states jsonChar spends on one character of
// s: the states inside multi-byte UTF-8 encodings and inside escapes.
func charCost(s runeSet) int {
	if len(s) == 0 {
		return 0
	}
	c := 1
	if s[len(s)-1][1] >= 0x80 {
		c += 16
	}
	if s[0][0] < 0x20 || s.has('"') || s.has('\\') || s.has('/') {
		c += 8
	}
	return c
}

// leaf matches one character of s.
func (a *cnfa) leaf(s runeSet) frag {
	in, out := a.add(), a.add()
	a.char(in, s, out)
	return frag{in, out}
}

// epsGraph is what the generic combinators need of an automaton: fresh
// states and epsilon moves. Both the byte automaton and the character
// automaton are built with them, so their shapes agree.
type epsGraph interface {
	add() int32
	eps(a, b int32)
}

func emptyOf[G epsGraph](g G) frag {
	s := g.add()
	return frag{s, s}
}

func seqOf[G epsGraph](g G, fs []frag) frag {
	if len(fs) == 0 {
		return emptyOf(g)
	}
	for i := 1; i < len(fs); i++ {
		g.eps(fs[i-1].out, fs[i].in)
	}
	return frag{fs[0].in, fs[len(fs)-1].out}
}

func altOf[G epsGraph](g G, fs []frag) frag {
	if len(fs) == 1 {
		return fs[0]
	}
	in, out := g.add(), g.add()
	for _, f := range fs {
		g.eps(in, f.in)
		g.eps(f.out, out)
	}
	return frag{in, out}
}

func optOf[G epsGraph](g G, f frag) frag {
	in, out := g.add(), g.add()
	g.eps(in, f.in)
	g.eps(in, out)
	g.eps(f.out, out)
	return frag{in, out}
}

func starOf[G epsGraph](g G, f frag) frag {
	in, out := g.add(), g.add()
	g.eps(in, f.in)
	g.eps(in, out)
	g.eps(f.out, in)
	return frag{in, out}
}

// repeatOf matches between lo and hi copies of what build makes (hi < 0:
// no upper bound); build is called once per copy needed.
func repeatOf[G epsGraph](g G, lo, hi int, build func() frag) frag {
	parts := make([]frag, 0, lo+1)
	for i := 0; i < lo; i++ {
		parts = append(parts, build())
	}
	if hi < 0 {
		return seqOf(g, append(parts, starOf(g, build())))
	}
	// The optional copies form a chain whose every link may also jump
	// straight to the end: linear in size, and the epsilon closure after
	// any copy is a single edge (nested optionals, (a(a(a)?)?)?, made it
	// as deep as the copies left, and every DFA state paid for it).
	if hi > lo {
		out := g.add()
		cur := g.add()
		g.eps(cur, out)
		tail := frag{cur, out}
		for i := lo; i < hi; i++ {
			f := build()
			g.eps(cur, f.in)
			g.eps(f.out, out)
			cur = f.out
		}
		parts = append(parts, tail)
	}
	return seqOf(g, parts)
}

// spell writes the fragment f of a into the byte automaton, one byte state
// per character state, and returns the fragment there. Byte states are
// numbered as the states are first met, each character's inner states
// right after its ends, so the bytes of one character stay close in
// memory as they did when patterns were built into the byte automaton.
func (c *schemaCompiler) spell(a *cnfa, f frag) frag {
	n := c.n
	id := make([]int32, len(a.st))
	for i := range id {
		id[i] = -1
	}
	get := func(x int32) int32 {
		if id[x] < 0 {
			id[x] = n.add()
		}
		return id[x]
	}
	for i := range a.st {
		s := &a.st[i]
		from := get(int32(i))
		for _, e := range s.eps {
			n.eps(from, get(e))
		}
		for _, e := range s.chars {
			if len(s.chars) == 1 {
				n.jsonChar(from, get(e.to), e.set)
				continue
			}
			// jsonChar marks a state that takes any character as such only
			// when the character's edges are all it has: give each edge a
			// state of its own.
			x := n.add()
			n.eps(from, x)
			n.jsonChar(x, get(e.to), e.set)
		}
	}
	return frag{get(f.in), get(f.out)}
}

// unbounded stands for "no bound" in spans.
const unbounded = math.MaxInt32

// spans returns, for every state of a, the fewest and the most characters
// on a path from it to out: lo is unbounded where out cannot be reached,
// hi where the paths are arbitrarily long. hi is exact below limit and
// only known to be at least limit above it.
func (a *cnfa) spans(out int32, limit int32) (lo, hi []int32) {
	ns := len(a.st)
	type redge struct{ from, w int32 }
	rev := make([][]redge, ns)
	for x := range a.st {
		for _, y := range a.st[x].eps {
			rev[y] = append(rev[y], redge{int32(x), 0})
		}
		for _, e := range a.st[x].chars {
			rev[e.to] = append(rev[e.to], redge{int32(x), 1})
		}
	}
	// lo: a breadth-first search backwards from out, one distance at a
	// time: the states at distance d (closed over epsilon moves, which
	// cost nothing) before those at d+1.
	lo = make([]int32, ns)
	for i := range lo {
		lo[i] = unbounded
	}
	lo[out] = 0
	cur := []int32{out}
	for d := int32(0); len(cur) > 0; d++ {
		for i := 0; i < len(cur); i++ {
			for _, r := range rev[cur[i]] {
				if r.w == 0 && lo[r.from] > d {
					lo[r.from] = d
					cur = append(cur, r.from)
				}
			}
		}
		var next []int32
		for _, y := range cur {
			if lo[y] != d {
				continue
			}
			for _, r := range rev[y] {
				if r.w == 1 && lo[r.from] > d+1 {
					lo[r.from] = d + 1
					next = append(next, r.from)
				}
			}
		}
		cur = next
	}
	// hi: strongly connected components of the states that reach out
	// (Tarjan's algorithm, iterative). A component with a character edge
	// inside repeats without bound; the others are ordered, and Tarjan
	// finishes a component after every component it reaches, so the
	// longest paths are filled in the order components complete.
	hi = make([]int32, ns)
	index := make([]int32, ns)
	low := make([]int32, ns)
	on := make([]bool, ns)
	comp := make([]int32, ns)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int32
	type frame struct {
		x    int32
		edge int // next successor: eps first, then chars
	}
	var calls []frame
	next := int32(0)
	succ := func(x int32, k int) (int32, int32, bool) {
		s := &a.st[x]
		if k < len(s.eps) {
			return s.eps[k], 0, true
		}
		if k -= len(s.eps); k < len(s.chars) {
			return s.chars[k].to, 1, true
		}
		return 0, 0, false
	}
	ncomp := int32(0)
	for root := range a.st {
		if index[root] >= 0 || lo[root] == unbounded {
			continue
		}
		calls = append(calls[:0], frame{int32(root), 0})
		index[root], low[root] = next, next
		next++
		stack = append(stack, int32(root))
		on[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			y, _, ok := succ(f.x, f.edge)
			if ok {
				f.edge++
				if lo[y] == unbounded {
					continue
				}
				if index[y] < 0 {
					index[y], low[y] = next, next
					next++
					stack = append(stack, y)
					on[y] = true
					calls = append(calls, frame{y, 0})
				} else if on[y] {
					low[f.x] = min(low[f.x], index[y])
				}
				continue
			}
			x := f.x
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].x
				low[p] = min(low[p], low[x])
			}
			if low[x] != index[x] {
				continue
			}
			// x roots a component: pop it and compute its longest path.
			start := len(stack) - 1
			for stack[start] != x {
				start--
			}
			members := stack[start:]
			for _, m := range members {
				on[m] = false
				comp[m] = ncomp
			}
			best, loops := int32(-1), false
			for _, m := range members {
				if m == out {
					best = max(best, 0)
				}
				for k := 0; ; k++ {
					y, w, ok := succ(m, k)
					if !ok {
						break
					}
					if lo[y] == unbounded {
						continue
					}
					if comp[y] == ncomp {
						loops = loops || w == 1
						continue
					}
					if hi[y] >= limit {
						best = limit
					} else {
						best = max(best, min(hi[y]+w, limit))
					}
				}
			}
			if loops {
				best = limit
			}
			for _, m := range members {
				hi[m] = best
			}
			stack = stack[:start]
			ncomp++
		}
	}
	for i := range hi {
		if lo[i] == unbounded {
			hi[i] = -1
		}
	}
	return lo, hi
}

// maxProduct bounds the size of a product automaton (its weight, about
// the byte states it will spell): a length bound or a second pattern whose
// product with a pattern needs more is refused rather than half-enforced.
const maxProduct = 1 << 19

// What bounded found.
type boundResult uint8

const (
	boundImplied  boundResult = iota // every string f matches has an allowed length: f as it is
	boundProduct                     // the product enforces the bounds
	boundEmpty                       // no string f matches has an allowed length
	boundTooLarge                    // the product would exceed maxProduct
)

// maxLayers bounds the count a product keeps; larger bounds are enforced
// only when implied or impossible.
const maxLayers = 1 << 20

// bounded returns the product of the fragment f of a with a count of the
// characters read: its paths are those of f with between minL and maxL
// characters (maxL < 0: no upper bound). A product state is a state of a
// with a count up to the larger bound, or with the count dropped: once
// every way on from a state has an allowed length, the count is no longer
// needed, and it stays dropped on every path from there (the lengths left
// only shrink with each character). States from which no allowed length
// can be reached are never made.
func (a *cnfa) bounded(f frag, minL, maxL int) (*cnfa, frag, boundResult) {
	top := max(minL, maxL)
	limit := int32(min(top, maxLayers) + 1)
	lo, hi := a.spans(f.out, limit)
	// Lengths of the whole fragment: fewest and most (most only known to
	// be at least limit from there on).
	L, H := lo[f.in], hi[f.in]
	switch {
	case L == unbounded, maxL >= 0 && int(L) > maxL, H < limit && int(H) < minL:
		return nil, frag{}, boundEmpty
	case int(L) >= minL && (maxL < 0 || H < limit && int(H) <= maxL):
		return nil, frag{}, boundImplied
	case top > maxLayers:
		return nil, frag{}, boundTooLarge
	}
	const free = -1 // the count of a state whose count was dropped
	// live reports whether some allowed length remains after k
	// characters at x; done whether every way on has one.
	live := func(x int32, k int32) bool {
		if lo[x] == unbounded || maxL >= 0 && int(k)+int(lo[x]) > maxL {
			return false
		}
		return int(k)+int(hi[x]) >= minL
	}
	done := func(x int32, k int32) bool {
		return int(k)+int(lo[x]) >= minL && (maxL < 0 || int(k)+int(hi[x]) <= maxL)
	}
	p := &cnfa{}
	index := map[[2]int32]int32{}
	var queue [][2]int32
	get := func(x, k int32) (int32, bool) {
		if lo[x] == unbounded {
			return -1, true
		}
		if k != free {
			if !live(x, k) {
				return -1, true
			}
			if done(x, k) {
				k = free
			}
		}
		if id, ok := index[[2]int32{x, k}]; ok {
			return id, true
		}
		if p.weight >= maxProduct {
			return -1, false
		}
		id := p.add()
		index[[2]int32{x, k}] = id
		queue = append(queue, [2]int32{x, k})
		return id, true
	}
	in, _ := get(f.in, 0)
	exit := p.add()
	for i := 0; i < len(queue); i++ {
		x, k := queue[i][0], queue[i][1]
		id := index[queue[i]]
		s := &a.st[x]
		for _, y := range s.eps {
			t, fits := get(y, k)
			if !fits {
				return nil, frag{}, boundTooLarge
			}
			if t >= 0 {
				p.eps(id, t)
			}
		}
		next := k
		if k != free {
			next++
		}
		for _, e := range s.chars {
			t, fits := get(e.to, next)
			if !fits {
				return nil, frag{}, boundTooLarge
			}
			if t >= 0 {
				p.char(id, e.set, t)
			}
		}
		if x == f.out && (k == free || int(k) >= minL && (maxL < 0 || int(k) <= maxL)) {
			p.eps(id, exit)
		}
	}
	return p.freeze(), frag{in, exit}, boundProduct
}

// intersect returns an automaton of the strings both fragments match: a
// state is a pair of states, each closed over its epsilon moves, and an
// edge takes the characters both edges take. ok is false when it would
// exceed maxProduct states.
func intersect(a *cnfa, fa frag, b *cnfa, fb frag) (p *cnfa, pf frag, ok bool) {
	ca, cb := closures(a), closures(b)
	p = &cnfa{}
	index := map[[2]int32]int32{}
	var queue [][2]int32
	get := func(x, y int32) (int32, bool) {
		k := [2]int32{x, y}
		if id, ok := index[k]; ok {
			return id, true
		}
		if p.weight >= maxProduct {
			return -1, false
		}
		id := p.add()
		index[k] = id
		queue = append(queue, k)
		return id, true
	}
	in, _ := get(fa.in, fb.in)
	exit := p.add()
	var targets []int32 // the product's edges from one state, merged by target
	var sets []runeSet
	for i := 0; i < len(queue); i++ {
		x, y := queue[i][0], queue[i][1]
		id := index[queue[i]]
		targets, sets = targets[:0], sets[:0]
		endA, endB := false, false
		for _, u := range ca(x) {
			endA = endA || u == fa.out
			for _, ea := range a.st[u].chars {
				for _, v := range cb(y) {
					for _, eb := range b.st[v].chars {
						s := ea.set.and(eb.set)
						if len(s) == 0 {
							continue
						}
						t, fits := get(ea.to, eb.to)
						if !fits {
							return nil, frag{}, false
						}
						j := 0
						for j < len(targets) && targets[j] != t {
							j++
						}
						if j == len(targets) {
							targets, sets = append(targets, t), append(sets, nil)
						}
						sets[j] = append(sets[j], s...)
					}
				}
			}
		}
		for _, v := range cb(y) {
			endB = endB || v == fb.out
		}
		for j, t := range targets {
			p.char(id, sets[j].normalize(), t)
		}
		if endA && endB {
			p.eps(id, exit)
		}
	}
	return p.freeze(), frag{in, exit}, true
}

// closures returns a function giving the epsilon closure of a state of a
// (computed once per state).
func closures(a *cnfa) func(int32) []int32 {
	memo := make([][]int32, len(a.st))
	seen := make([]int32, len(a.st))
	epoch := int32(0)
	return func(x int32) []int32 {
		if memo[x] != nil {
			return memo[x]
		}
		epoch++
		out := []int32{}
		stack := []int32{x}
		for len(stack) > 0 {
			y := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[y] == epoch {
				continue
			}
			seen[y] = epoch
			out = append(out, y)
			stack = append(stack, a.st[y].eps...)
		}
		memo[x] = out
		return out
	}
}

// matches reports whether the fragment f of a matches all of s.
func (a *cnfa) matches(f frag, s string) bool {
	cl := closures(a)
	cur := map[int32]bool{}
	for _, x := range cl(f.in) {
		cur[x] = true
	}
	for _, r := range s {
		if r == utf8.RuneError {
			return false
		}
		next := map[int32]bool{}
		for x := range cur {
			for _, e := range a.st[x].chars {
				if e.set.has(r) {
					for _, y := range cl(e.to) {
						next[y] = true
					}
				}
			}
		}
		if len(next) == 0 {
			return false
		}
		cur = next
	}
	return cur[f.out]
}
