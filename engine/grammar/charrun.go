package grammar

import "github.com/prism-local/prism/internal/utf8seq"

// A length-bounded pattern is a product of the pattern's automaton with a
// count of the characters read (chars.go), so every count is a DFA state
// of its own, and near the bound no two counts look alike to plainKey: each
// was one walk of the whole trie on its first visit. Many bounded patterns
// take, for their first characters, every plain character but a few ASCII
// ones ([^x], the . around an unanchored pattern) whatever the count; what
// the count changes is how many characters may come. charRun finds how
// many, and byChars sets the tokens of up to that many characters from the
// vocabulary's bitmasks and walks only the tries of the longer ones that
// may still be allowed.

// maxRunStates bounds the DFA states charRun looks at, over all its
// layers; past it the run found so far is the answer.
const maxRunStates = 256

// run is what charRun found at a state.
type run struct {
	// m: a plain token of up to m characters (its last one possibly
	// incomplete) is allowed exactly when it holds none of the ASCII
	// bytes in excl. 0 when the state itself does not take every plain
	// character outside excl.
	m    int
	excl [2]uint64
	// most: no plain token of more than most characters is allowed;
	// maxRun+1 when not known.
	most int
}

// runState is what charsFrom found at one DFA state.
type runState struct {
	excl [2]uint64 // plain ASCII bytes refused
	full bool      // every other plain character taken
	none bool      // no plain character taken, not even its first byte
	succ []int32   // the states after each character taken, deduplicated
}

// charRun looks at the states plain characters lead to from DFA state s,
// one layer per character: layer j holds every state j characters lead to.
// m is the first layer with a state that does not take every plain
// character outside excl (all states before it refuse exactly excl);
// most is the first layer whose states take no plain character.
func (g *Grammar) charRun(s int32) run {
	// Most states (outside strings, or in a pattern of a few ASCII
	// characters) refuse some multi-byte character; the first and the
	// last lead byte tell most of them apart before any layer is built.
	if g.d.step(s, 0xC2) < 0 || g.d.step(s, 0xF4) < 0 {
		return run{}
	}
	infos := map[int32]*runState{}
	looked := 0
	r := run{m: -1, most: maxRun + 1}
	layer := []int32{s}
	var next []int32
	for j := 0; j <= maxRun; j++ {
		none := true
		for i, t := range layer {
			in := infos[t]
			if in == nil {
				in = g.charsFrom(t)
				infos[t] = in
			}
			none = none && in.none
			if r.m < 0 {
				switch {
				case !in.full || (j > 0 || i > 0) && in.excl != r.excl:
					r.m = j
				default:
					r.excl = in.excl
				}
			}
		}
		if none {
			if r.m < 0 {
				r.m = j
			}
			r.most = j
			return r
		}
		if r.m == 0 {
			return r // s itself is not a run: nothing more to learn
		}
		if j == maxRun {
			break
		}
		if r.m < 0 && j+1 == maxRun {
			// runs go up to maxRun characters: layers 0 to maxRun-1 passed.
			r.m = maxRun
		}
		next = next[:0]
		for _, t := range layer {
			for _, u := range infos[t].succ {
				if !containsState(next, u) {
					next = append(next, u)
				}
			}
		}
		if looked += len(next); looked > maxRunStates {
			if r.m < 0 {
				r.m = j + 1 // layers 0 to j passed; the next is not known
			}
			return r
		}
		layer, next = next, layer
	}
	return r
}

func containsState(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// charsFrom steps every plain character from DFA state t: the printable
// ASCII ones (and DEL) but the quote and the backslash, and every valid
// multi-byte encoding.
func (g *Grammar) charsFrom(t int32) *runState {
	d := g.d
	in := &runState{full: true, none: true}
	add := func(u int32) {
		if !containsState(in.succ, u) {
			in.succ = append(in.succ, u)
		}
	}
	for b := byte(0x20); b < 0x80; b++ {
		if b == '"' || b == '\\' {
			continue
		}
		if u := d.step(t, b); u >= 0 {
			in.none = false
			add(u)
		} else {
			in.excl[b>>6] |= 1 << (b & 63)
		}
	}
	// tails reports whether u takes every sequence of n bytes, the first
	// in [lo, hi] and the others continuation bytes, passing the states
	// after them to add; each (state, n, range) is stepped once.
	type key struct {
		u      int32
		n      int
		lo, hi byte
	}
	done := map[key]bool{}
	var tails func(u int32, n int, lo, hi byte) bool
	tails = func(u int32, n int, lo, hi byte) bool {
		k := key{u, n, lo, hi}
		if ok, seen := done[k]; seen {
			return ok
		}
		ok := true
		for c := int(lo); c <= int(hi); c++ {
			w := d.step(u, byte(c))
			switch {
			case w < 0:
				ok = false
			case n == 1:
				add(w)
			default:
				ok = tails(w, n-1, 0x80, 0xBF) && ok
			}
		}
		done[k] = ok
		return ok
	}
	for lead := 0xC2; lead <= 0xF4; lead++ {
		u := d.step(t, byte(lead))
		if u < 0 {
			in.full = false
			continue
		}
		in.none = false
		n, lo, hi := utf8seq.Tail(byte(lead))
		if !tails(u, n, lo, hi) {
			in.full = false
		}
	}
	return in
}

// worth reports whether byChars walks fewer trie nodes for r than a walk
// of the whole trie would: a short run followed by tokens of any length
// walks most of the vocabulary in tries that share fewer prefixes.
func (g *Grammar) worth(r run) bool {
	v := g.vocab
	n := len(v.rest.nodes)
	for c := r.m + 1; c <= min(r.most, maxRun); c++ {
		n += len(v.chars[c].nodes)
	}
	return n < len(v.all.nodes)
}

// byChars sets the plain tokens of up to r.m characters that hold none of
// r.excl, walks the tries of the plain tokens of r.m+1 to r.most
// characters (maxRun at most), and walks the other tokens.
func (g *Grammar) byChars(s int32, r run, bits []uint64) {
	v := g.vocab
	copy(bits, v.runs[r.m])
	for b := range byte(0x80) {
		if r.excl[b>>6]&(1<<(b&63)) != 0 && v.with[b] != nil {
			for i, w := range v.with[b] {
				bits[i] &^= w
			}
		}
	}
	for n := r.m + 1; n <= min(r.most, maxRun); n++ {
		g.walk(&v.chars[n], 0, int32(len(v.chars[n].nodes)), s, bits)
	}
	g.walk(&v.rest, 0, int32(len(v.rest.nodes)), s, bits)
}
