package grammar

import (
	"sync"

	"github.com/prism-local/prism/engine"
)

// maxMaskBytes caps the memory one Grammar spends on cached masks; past
// it, masks of new states are computed at every visit instead.
const maxMaskBytes = 64 << 20

// Grammar is a compiled constraint bound to a Vocabulary: a JSON Schema,
// JSON mode or a tool call. It implements engine.Constraint, so it goes in
// engine.Request.Constraint. A Grammar is safe for concurrent use; its
// automaton and masks are built lazily and shared by all its matchers
// (mask computation for one Grammar is serialised).
type Grammar struct {
	vocab    *Vocabulary
	warnings []Warning

	mu        sync.Mutex
	d         *dfa
	init      int32
	masks     [][]uint64 // per DFA state; nil until computed
	maskBytes int
	scratch   []uint64
	depth     []int32
	stats     [numRules]int
}

func newGrammar(v *Vocabulary, n *nfa, entry int32, warnings []Warning) *Grammar {
	g := &Grammar{vocab: v, warnings: warnings, d: newDFA(n), depth: make([]int32, v.depth+1)}
	g.init = g.d.start(entry)
	return g
}

// VocabSize is the size of the vocabulary the grammar was compiled for.
func (g *Grammar) VocabSize() int { return g.vocab.size }

// Warnings lists what the grammar does not enforce (keywords a non-strict
// compile ignored). It is empty for a strict compile.
func (g *Grammar) Warnings() []Warning { return g.warnings }

// NewMatcher starts a generation at the grammar's first byte.
func (g *Grammar) NewMatcher() engine.Matcher { return g.Start() }

// Start is NewMatcher with the concrete type.
func (g *Grammar) Start() *Matcher { return &Matcher{g: g, state: g.init} }

// Matcher is the state of one generation under a Grammar. It is not safe
// for concurrent use.
type Matcher struct {
	g     *Grammar
	state int32
}

// Mask sets the bits of the ids that may come next and reports whether
// the text may end here. In steady state (states seen before) it copies a
// cached mask and allocates nothing.
func (m *Matcher) Mask(allowed []uint64) (canEnd bool) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	copy(allowed, g.maskOf(m.state))
	return g.d.accept[m.state]
}

// CanEnd reports whether the text may end here.
func (m *Matcher) CanEnd() bool {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	return m.g.d.accept[m.state]
}

// Allowed reports whether id may come next, without computing a mask.
func (m *Matcher) Allowed(id int32) bool {
	_, ok := m.try(id)
	return ok
}

// Advance moves past id; it returns false, and leaves the matcher as it
// was, when the grammar does not allow id here.
func (m *Matcher) Advance(id int32) bool {
	s, ok := m.try(id)
	if ok {
		m.state = s
	}
	return ok
}

func (m *Matcher) try(id int32) (int32, bool) {
	g := m.g
	if id < 0 || int(id) >= g.vocab.size {
		return 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.vocab.pieces[id]
	if len(p) == 0 {
		// A token the grammar names by id (a tool-call marker) is matched
		// by its id alone where the state has an edge for it.
		if t := g.d.tokenStep(m.state, id); t >= 0 {
			return t, true
		}
		if !g.d.literal[m.state] {
			return 0, false
		}
		p = g.vocab.literalPiece(id)
		if len(p) == 0 {
			return 0, false
		}
	}
	s := m.state
	for _, b := range p {
		if s = g.d.step(s, b); s < 0 {
			return 0, false
		}
	}
	return s, true
}

// AdvanceBytes moves past text given as bytes, whatever tokens spell it;
// it returns false, leaving the matcher as it was, when the grammar does
// not allow the bytes.
func (m *Matcher) AdvanceBytes(text []byte) bool {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	s := m.state
	for _, b := range text {
		if s = g.d.step(s, b); s < 0 {
			return false
		}
	}
	m.state = s
	return true
}

// maskOf returns the mask of DFA state s; g.mu is held.
func (g *Grammar) maskOf(s int32) []uint64 {
	for int(s) >= len(g.masks) {
		g.masks = append(g.masks, nil)
	}
	if mk := g.masks[s]; mk != nil {
		return mk
	}
	words := (g.vocab.size + 63) / 64
	var mk []uint64
	if g.maskBytes+8*words <= maxMaskBytes {
		mk = make([]uint64, words)
		g.masks[s] = mk
		g.maskBytes += 8 * words
	} else {
		if g.scratch == nil {
			g.scratch = make([]uint64, words)
		}
		mk = g.scratch
		clear(mk)
	}
	g.fill(s, mk)
	return mk
}

// fill walks the token trie from DFA state s and sets the bit of every
// token whose bytes the grammar accepts. A subtree is skipped as soon as
// its first byte is refused, so a step touches only the tokens that share
// an allowed prefix. Where a string allows any characters next (see
// plainRun), the plain tokens come from a precomputed bitmask and only the
// other tokens are walked.
func (g *Grammar) fill(s int32, bits []uint64) {
	g.fillPlain(s, bits)
	g.literals(s, bits)
}

// fillPlain is fill without the special and added tokens: it sets the
// bits of the plain tokens by the cheapest rule that holds at s and walks
// the rest.
func (g *Grammar) fillPlain(s int32, bits []uint64) {
	v := g.vocab
	switch n := g.plainRun(s); {
	case n > 0:
		g.stats[byRun]++
		copy(bits, v.runs[n])
		g.walk(&v.rest, 0, int32(len(v.rest.nodes)), s, bits)
		return
	case g.d.free[s]:
		// One configuration takes any plain characters, any number of
		// them (the .* around an unanchored pattern): every plain token is
		// allowed, whatever the others do.
		g.stats[byFree]++
		copy(bits, v.runs[maxRun])
		g.walk(&v.rest, 0, int32(len(v.rest.nodes)), s, bits)
		return
	}
	if g.byFirstByte(s, bits) {
		g.stats[byFirst]++
		return
	}
	key, ok := g.d.plainKey(s)
	if ok {
		if mk := v.shared.get(key); mk != nil {
			g.stats[byShared]++
			copy(bits, mk)
			g.walk(&v.long, 0, int32(len(v.long.nodes)), s, bits)
			return
		}
	}
	if r := g.charRun(s); r.m > 0 && g.worth(r) {
		g.stats[byCharRun]++
		g.byChars(s, r, bits)
		if ok {
			v.shared.put(key, g.sharedPart(bits))
		}
		return
	}
	g.stats[byWalk]++
	if g.walk(&v.all, 0, int32(len(v.all.nodes)), s, bits) >= minSharedWalk && ok {
		v.shared.put(key, g.sharedPart(bits))
	}
}

// sharedPart returns a copy of the short plain tokens of bits, what the
// vocabulary's shared masks keep.
func (g *Grammar) sharedPart(bits []uint64) []uint64 {
	mk := make([]uint64, len(bits))
	for i, w := range g.vocab.short {
		mk[i] = bits[i] & w
	}
	return mk
}

// minSharedWalk is the number of trie nodes a walk must have accepted for
// its plain part to be worth keeping in the vocabulary's shared masks.
const minSharedWalk = 4096

// How fillPlain computed a mask, counted per Grammar for the tests.
const (
	byWalk = iota
	byRun
	byFree
	byFirst
	byShared
	byCharRun
	numRules
)

// byFirstByte computes the mask of s one first byte at a time, for a state
// where the string allows any characters after some first characters but
// not after others (a property name that may be listed or additional: any
// character but a listed name's first leads to a free string). For a plain
// ASCII first byte b whose successor allows runs of plain characters (or
// any plain characters at all, as an extra member's key does), the
// plain tokens starting with b come from the vocabulary's bitmasks and only
// the other tokens starting with b are walked; every other first byte's
// subtree is walked. It returns false, having set nothing, when no first
// byte qualifies (the whole trie is walked instead).
func (g *Grammar) byFirstByte(s int32, bits []uint64) bool {
	v, d := g.vocab, g.d
	var run [128]int // per plain ASCII byte: 1 + the successor's plain run, 0 to walk
	var counts [maxRun + 1]int
	best, bestN := 0, 0
	for b := byte(0x20); b < 0x7F; b++ {
		if v.first[b] == nil {
			continue
		}
		t := d.step(s, b)
		if t < 0 {
			continue
		}
		n := maxRun // any plain characters after b (an extra member's key)
		if !d.free[t] {
			n = g.plainRun(t)
		}
		if n > 0 {
			run[b] = min(n+1, maxRun)
			counts[run[b]]++
			if counts[run[b]] > bestN {
				best, bestN = run[b], counts[run[b]]
			}
		}
	}
	if bestN == 0 {
		return false
	}
	// The largest group: every plain ASCII-first token of up to best
	// characters, less the first bytes outside the group.
	rb := v.runs[best]
	for i, w := range v.asciiFirst {
		bits[i] = w & rb[i]
	}
	for b := range byte(0x80) {
		if v.first[b] != nil && run[b] != best {
			for i, w := range v.first[b] {
				bits[i] &^= w
			}
		}
	}
	for b := range byte(0x80) {
		if n := run[b]; n > 0 && n != best {
			rn := v.runs[n]
			for i, w := range v.first[b] {
				bits[i] |= w & rn[i]
			}
		}
	}
	for b := range 256 {
		if b < 0x80 && run[b] > 0 {
			if r := v.restRoot[b]; r >= 0 {
				g.walk(&v.rest, r, v.rest.nodes[r].skip, s, bits)
			}
			continue
		}
		if r := v.allRoot[b]; r >= 0 {
			g.walk(&v.all, r, v.all.nodes[r].skip, s, bits)
		}
	}
	return true
}

// literals sets the bits of the special and added tokens whose text
// DFA state s accepts (only inside a literal suffix or the free part), and
// of the tokens its token edges take.
func (g *Grammar) literals(s int32, bits []uint64) {
	for _, id := range g.d.toks[s] {
		if g.d.tokenStep(s, id) >= 0 {
			bits[id>>6] |= 1 << (id & 63)
		}
	}
	if !g.d.literal[s] {
		return
	}
	for _, l := range g.vocab.literals {
		if g.accepts(s, l.piece) {
			bits[l.id>>6] |= 1 << (l.id & 63)
		}
	}
}

// walk sets the bits of the tokens of tr's nodes [from, to) (whole
// subtrees of the root) that DFA state s accepts.
// It returns the number of nodes it accepted.
func (g *Grammar) walk(tr *trie, from, to int32, s int32, bits []uint64) (accepted int) {
	d := g.d
	stack := g.depth
	stack[0] = s
	nodes := tr.nodes[:to]
	for i := int(from); i < len(nodes); {
		nd := &nodes[i]
		p := stack[nd.depth-1]
		nx := d.trans[p][nd.b]
		if nx == unknown {
			nx = d.step(p, nd.b)
		}
		if nx < 0 {
			i = int(nd.skip)
			continue
		}
		stack[nd.depth] = nx
		for _, id := range tr.ids[nd.first : nd.first+nd.n] {
			bits[id>>6] |= 1 << (id & 63)
		}
		accepted++
		i++
	}
	return accepted
}

// plainRun returns n > 0 when, from DFA state s, every plain token of up
// to n characters is allowed and no longer one is (up to maxRun, which
// stands for any length): each of the first n characters may be any plain
// character, all leading to one state, and the state after them takes no
// plain character or n is maxRun. It returns 0 when the plain tokens must
// be walked one by one.
func (g *Grammar) plainRun(s int32) int {
	d := g.d
	n := 0
	for n < maxRun {
		t := d.plainNext(s)
		if t < 0 {
			break
		}
		if t == s {
			return maxRun // a free string's body: any number of characters
		}
		s = t
		n++
	}
	if n < maxRun && d.acceptsPlain(s) {
		return 0
	}
	return n
}

// accepts reports whether the bytes p can follow DFA state s.
func (g *Grammar) accepts(s int32, p []byte) bool {
	for _, b := range p {
		if s = g.d.step(s, b); s < 0 {
			return false
		}
	}
	return true
}
