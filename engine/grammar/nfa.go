package grammar

import "slices"

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
	// anyPlain: every plain character (one a JSON string holds raw) leads
	// from here to a state that is anyPlain too, so any run of them is
	// taken, though not all to one state: the trie of listed names an
	// extra member's key must avoid, each node of which leaves to a free
	// string at a character no name continues with. Masks treat it as a
	// free string's body.
	anyPlain bool
	// literal: a state of a literal suffix (Options.Suffix), where special
	// and added tokens spelling the suffix's text are allowed.
	literal bool
	// tok: the state has token edges, in nfa.tok (kept out of nstate so
	// that grammars without them pay nothing per state).
	tok bool
	// lazy: a state between an object's members whose edges are made on
	// first use (members.go); its description is in nfa.lazy.
	lazy bool
}

// nfa is under construction while a grammar compiles; afterwards it is
// read-only.
type nfa struct {
	st  []nstate
	tok map[int32][]tokenEdge // the token edges of the states marked tok
	// The objects whose members come in any order, and their lazy states
	// not expanded yet (members.go). A running DFA extends the network
	// through these; nothing else changes it after the compile.
	objs    []memberSet
	lazy    map[int32]memberKey
	lazyIdx map[string]int32
	// The strings whose characters are counted lazily, and their states
	// not expanded yet ((string, count) pairs).
	strs     []countedString
	counting map[int32][2]int32
	countIdx map[[2]int32]int32
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
	for i := range n.objs {
		n.objs[i].settle(prod)
	}
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

// productive marks the states from which an exit is reachable: a
// worklist from the exits backwards over the edges (each state is looked
// at again only when one of its successors turns productive), rather than
// sweeps over every state until nothing changes, which cost a sweep per
// level of nesting on large schemas.
func (n *nfa) productive() []bool {
	prod := make([]bool, len(n.st))
	// pred holds each state's predecessors, in compressed rows: pred[at[j]:at[j+1]].
	at := make([]int32, len(n.st)+1)
	n.successors(func(i, j int32) { at[j+1]++ })
	for j := range n.st {
		at[j+1] += at[j]
	}
	pred := make([]int32, at[len(n.st)])
	fill := slices.Clone(at[:len(n.st)])
	n.successors(func(i, j int32) {
		pred[fill[j]] = i
		fill[j]++
	})
	var queue []int32
	for i := range n.st {
		if n.st[i].exit {
			prod[i] = true
			queue = append(queue, int32(i))
		}
	}
	for len(queue) > 0 {
		j := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, i := range pred[at[j]:at[j+1]] {
			if !prod[i] && n.reaches(i, prod) {
				prod[i] = true
				queue = append(queue, i)
			}
		}
	}
	return prod
}

// successors calls f(i, j) for every state j whose productivity state i's
// depends on: the targets of its edges, both ends of its calls, and for a
// lazy state the members of its object.
func (n *nfa) successors(f func(i, j int32)) {
	for x := range n.st {
		i := int32(x)
		s := &n.st[i]
		for _, e := range s.bytes {
			f(i, e.to)
		}
		for _, e := range s.eps {
			f(i, e)
		}
		for _, c := range s.calls {
			f(i, c.sub)
			f(i, c.ret)
		}
		if s.tok {
			for _, e := range n.tok[i] {
				f(i, e.to)
			}
		}
		if k, ok := n.counting[i]; s.lazy && ok {
			f(i, n.strs[k[0]].close)
		} else if s.lazy {
			o := &n.objs[n.lazy[i].obj]
			f(i, o.end)
			for _, es := range [][]int32{o.first, o.comma, o.xFirst, o.xComma} {
				for _, e := range es {
					f(i, e)
				}
			}
		}
	}
}

// reaches reports whether state i reaches an exit, given the states known
// to be productive.
func (n *nfa) reaches(i int32, prod []bool) bool {
	s := &n.st[i]
	for _, e := range s.bytes {
		if prod[e.to] {
			return true
		}
	}
	for _, e := range s.eps {
		if prod[e] {
			return true
		}
	}
	for _, c := range s.calls {
		if prod[c.sub] && prod[c.ret] {
			return true
		}
	}
	if s.tok {
		for _, e := range n.tok[i] {
			if prod[e.to] {
				return true
			}
		}
	}
	return s.lazy && n.lazyProductive(i, prod)
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
