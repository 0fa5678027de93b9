package grammar

// The compiled form of a grammar is a recursive transition network: a byte
// NFA whose states may also call a sub-network (push a return state, jump
// to the sub-network's entry) and whose exit states return to the caller.
// Regular parts (strings, numbers, patterns, formats) are plain byte
// automata; objects, arrays and $ref are calls, so recursive schemas need
// no unrolling. The lazy DFA in dfa.go runs it.

type byteEdge struct {
	lo, hi byte
	to     int32
}

type callEdge struct {
	sub, ret int32
}

// tokenEdge is a move on one special or added token, matched by its id
// rather than its text: a tool-call marker such as DeepSeek's
// <｜tool▁calls▁begin｜> or harmony's <|channel|>.
type tokenEdge struct {
	id, to int32
}

type nstate struct {
	bytes []byteEdge
	eps   []int32
	calls []callEdge
	exit  bool // reaching it returns to the caller (or ends the text)
	// plainTo, when not zero, is 1 + the state every character JSON
	// allows raw in a string leads to (through the character's bytes), and
	// the state's only other byte edge is the backslash of an escape: the
	// position of one unconstrained character in a string (plainTo-1 is the state itself in a free
	// string's body). Masks use it to allow runs of plain tokens at once.
	plainTo int32
	// literal: a state of a literal suffix (Options.Suffix), where special
	// and added tokens spelling the suffix's text are allowed.
	literal bool
	// tok: the state has token edges, in nfa.tok (kept out of nstate so
	// that grammars without them pay nothing per state).
	tok bool
}

// nfa is under construction while a grammar compiles; afterwards it is
// read-only.
type nfa struct {
	st  []nstate
	tok map[int32][]tokenEdge // the token edges of the states marked tok
}

// frag is a piece of automaton with one entry and one exit state.
type frag struct{ in, out int32 }

func (n *nfa) add() int32 {
	n.st = append(n.st, nstate{})
	return int32(len(n.st) - 1)
}

func (n *nfa) eps(a, b int32) { n.st[a].eps = append(n.st[a].eps, b) }

func (n *nfa) edge(a int32, lo, hi byte, b int32) {
	n.st[a].bytes = append(n.st[a].bytes, byteEdge{lo, hi, b})
}

func (n *nfa) tokenEdge(a, id, b int32) {
	if n.tok == nil {
		n.tok = map[int32][]tokenEdge{}
	}
	n.tok[a] = append(n.tok[a], tokenEdge{id, b})
	n.st[a].tok = true
}

// token matches the one token id.
func (n *nfa) token(id int32) frag {
	in, out := n.add(), n.add()
	n.tokenEdge(in, id, out)
	return frag{in, out}
}

// empty is a fragment matching the empty string.
func (n *nfa) empty() frag { return emptyOf(n) }

// lit matches exactly s.
func (n *nfa) lit(s string) frag {
	in := n.add()
	cur := in
	for i := 0; i < len(s); i++ {
		nx := n.add()
		n.edge(cur, s[i], s[i], nx)
		cur = nx
	}
	return frag{in, cur}
}

// class matches one byte in [lo, hi].
func (n *nfa) byteClass(lo, hi byte) frag {
	in, out := n.add(), n.add()
	n.edge(in, lo, hi, out)
	return frag{in, out}
}

// seq matches its fragments one after another.
func (n *nfa) seq(fs ...frag) frag { return seqOf(n, fs) }

// alt matches any one of its fragments.
func (n *nfa) alt(fs ...frag) frag { return altOf(n, fs) }

func (n *nfa) opt(f frag) frag { return optOf(n, f) }

// star matches f zero or more times.
func (n *nfa) star(f frag) frag { return starOf(n, f) }

// call matches one value of the sub-network entered at sub.
func (n *nfa) call(sub int32) frag {
	in, out := n.add(), n.add()
	n.st[in].calls = append(n.st[in].calls, callEdge{sub, out})
	return frag{in, out}
}

// repeat matches between lo and hi copies of what build makes (hi < 0: no
// upper bound); build is called once per copy needed.
func (n *nfa) repeat(lo, hi int, build func() frag) frag { return repeatOf(n, lo, hi, build) }

// trim removes every edge into a state from which no exit is reachable, so
// that a matcher never walks into a dead end: every prefix it accepts can
// be completed. It reports whether start itself is productive.
func (n *nfa) trim(start int32) bool {
	prod := n.productive()
	for i := range n.st {
		s := &n.st[i]
		s.bytes = filter(s.bytes, func(e byteEdge) bool { return prod[e.to] })
		s.eps = filter(s.eps, func(e int32) bool { return prod[e] })
		s.calls = filter(s.calls, func(c callEdge) bool { return prod[c.sub] && prod[c.ret] })
		if s.tok {
			n.tok[int32(i)] = filter(n.tok[int32(i)], func(e tokenEdge) bool { return prod[e.to] })
			s.tok = len(n.tok[int32(i)]) > 0
		}
	}
	return prod[start]
}

// productive marks the states from which an exit is reachable.
func (n *nfa) productive() []bool {
	prod := make([]bool, len(n.st))
	for changed := true; changed; {
		changed = false
		for i := range n.st {
			if prod[i] {
				continue
			}
			s := &n.st[i]
			ok := s.exit
			for _, e := range s.bytes {
				ok = ok || prod[e.to]
			}
			for _, e := range s.eps {
				ok = ok || prod[e]
			}
			for _, c := range s.calls {
				ok = ok || prod[c.sub] && prod[c.ret]
			}
			if s.tok {
				for _, e := range n.tok[int32(i)] {
					ok = ok || prod[e.to]
				}
			}
			if ok {
				prod[i], changed = true, true
			}
		}
	}
	return prod
}

func filter[T any](xs []T, keep func(T) bool) []T {
	out := xs[:0]
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// upTo matches any bytes up to and including the first occurrence of t:
// the string-matching automaton of t (Knuth–Morris–Pratt), state k having
// matched the first k bytes.
func (n *nfa) upTo(t string) frag {
	fail := make([]int, len(t)+1)
	for i, k := 1, 0; i < len(t); i++ {
		for k > 0 && t[i] != t[k] {
			k = fail[k]
		}
		if t[i] == t[k] {
			k++
		}
		fail[i+1] = k
	}
	st := make([]int32, len(t)+1)
	for i := range st {
		st[i] = n.add()
	}
	for k := 0; k < len(t); k++ {
		next := [256]int{}
		for b := range 256 {
			j := k
			for j > 0 && t[j] != byte(b) {
				j = fail[j]
			}
			if t[j] == byte(b) {
				j++
			}
			next[b] = j
		}
		for lo := 0; lo < 256; {
			hi := lo
			for hi+1 < 256 && next[hi+1] == next[lo] {
				hi++
			}
			n.edge(st[k], byte(lo), byte(hi), st[next[lo]])
			lo = hi + 1
		}
	}
	return frag{st[0], st[len(t)]}
}
