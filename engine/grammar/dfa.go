package grammar

import (
	"encoding/binary"
	"slices"
)

// The lazy DFA runs the network: a DFA state is the set of NFA
// configurations (state, call stack) reachable after the bytes so far,
// closed over epsilon moves, calls and returns and reduced to the
// configurations that can consume a byte. States and their byte
// transitions are built on first use and kept, so a warmed grammar steps
// through a table: one array load per byte. Call stacks are interned
// (parent, return state) nodes; stack 0 is the empty stack.

const (
	unknown = -2 // transition not computed yet
	dead    = -1 // no configuration survives the byte

	// maxDepth bounds the call stack. Deeper nesting is refused (the
	// alternatives that need it are not offered), which also stops
	// left-recursive references from recursing forever.
	maxDepth = 200
)

type config struct{ state, stack int32 }

// row is one DFA state's transitions, indexed by byte.
type row [256]int32

const rowsPerSlab = 32

var unknownRow = func() (r row) {
	for i := range r {
		r[i] = unknown
	}
	return r
}()

type stackNode struct{ parent, ret, depth int32 }

type dfa struct {
	n        *nfa
	stacks   []stackNode
	stackIdx map[[2]int32]int32
	sets     [][]config // per DFA state
	accept   []bool     // per DFA state: the text may end here
	plain    []int32    // per DFA state: the state after any plain character, dead when they differ, unknown until asked
	literal  []bool     // per DFA state: inside a literal suffix
	free     []bool     // per DFA state: a configuration sits in a free string's body (any plain characters, any number)
	// toks holds, for the DFA states whose configurations have token
	// edges, the ids they take (no entry for the others: most grammars
	// have none, and a state costs nothing for it).
	toks    map[int32][]int32
	tokNext map[[2]int32]int32
	index   map[string]int32
	// trans holds each DFA state's row of 256 transitions. Rows come from
	// slabs of rowsPerSlab, so a new state never copies the table (a flat
	// table's growth copied megabytes on first visits).
	trans []*row
	slab  []row

	// closure scratch
	seen    map[config]struct{}
	visited []config
	work    []config
	out     []config
	key     []byte

	// plainKey scratch, per NFA state
	keyNum                             []int32
	keySeen                            []uint32
	keyEpoch                           uint32
	keyOrder                           []int32
	keyLayer, keyNext, keyCl, keyStack []int32
	keyBuf                             []byte
}

func newDFA(n *nfa) *dfa {
	return &dfa{
		n:        n,
		stacks:   []stackNode{{parent: -1, ret: -1}},
		stackIdx: map[[2]int32]int32{},
		index:    map[string]int32{},
		seen:     map[config]struct{}{},
	}
}

func (d *dfa) push(stack, ret int32) int32 {
	k := [2]int32{stack, ret}
	if id, ok := d.stackIdx[k]; ok {
		return id
	}
	id := int32(len(d.stacks))
	d.stacks = append(d.stacks, stackNode{parent: stack, ret: ret, depth: d.stacks[stack].depth + 1})
	d.stackIdx[k] = id
	return id
}

// start returns the DFA state at the entry of the network.
func (d *dfa) start(entry int32) int32 {
	d.work = append(d.work[:0], config{entry, 0})
	return d.close()
}

// step returns the state after byte b from state s (dead when none). The
// bytes around b that match exactly the same edges lead to the same state,
// so their transitions are filled at once: one closure per byte class
// ([a-z], a UTF-8 continuation range) rather than one per byte.
func (d *dfa) step(s int32, b byte) int32 {
	t := d.trans[s][b]
	if t != unknown {
		return t
	}
	d.work = d.work[:0]
	lo, hi := 0, 255
	for _, c := range d.sets[s] {
		for _, e := range d.n.st[c.state].bytes {
			switch {
			case b >= e.lo && b <= e.hi:
				d.work = append(d.work, config{e.to, c.stack})
				lo, hi = max(lo, int(e.lo)), min(hi, int(e.hi))
			case e.hi < b:
				lo = max(lo, int(e.hi)+1)
			default:
				hi = min(hi, int(e.lo)-1)
			}
		}
	}
	t = dead
	if len(d.work) > 0 {
		t = d.close()
	}
	r := d.trans[s]
	for x := lo; x <= hi; x++ {
		r[x] = t
	}
	return t
}

// close closes the configurations in d.work and interns the result; it
// returns dead for an empty set that cannot end.
func (d *dfa) close() int32 {
	d.out = d.out[:0]
	d.visited = d.visited[:0]
	useMap := false
	accept := false
	for len(d.work) > 0 {
		c := d.work[len(d.work)-1]
		d.work = d.work[:len(d.work)-1]
		// Closures are small: a linear scan beats hashing until they grow.
		if !useMap && len(d.visited) >= 48 {
			clear(d.seen)
			for _, v := range d.visited {
				d.seen[v] = struct{}{}
			}
			useMap = true
		}
		if useMap {
			if _, ok := d.seen[c]; ok {
				continue
			}
			d.seen[c] = struct{}{}
		} else {
			if slices.Contains(d.visited, c) {
				continue
			}
		}
		d.visited = append(d.visited, c)
		if d.n.st[c.state].lazy {
			d.n.expand(c.state)
		}
		st := &d.n.st[c.state]
		if len(st.bytes) > 0 || st.tok {
			d.out = append(d.out, c)
		}
		for _, e := range st.eps {
			d.work = append(d.work, config{e, c.stack})
		}
		if len(st.calls) > 0 && d.stacks[c.stack].depth < maxDepth {
			for _, call := range st.calls {
				d.work = append(d.work, config{call.sub, d.push(c.stack, call.ret)})
			}
		}
		if st.exit {
			if c.stack == 0 {
				accept = true
			} else {
				sn := d.stacks[c.stack]
				d.work = append(d.work, config{sn.ret, sn.parent})
			}
		}
	}
	if len(d.out) == 0 && !accept {
		return dead
	}
	slices.SortFunc(d.out, func(a, b config) int {
		if a.state != b.state {
			return int(a.state - b.state)
		}
		return int(a.stack - b.stack)
	})
	d.key = d.key[:0]
	if accept {
		d.key = append(d.key, 1)
	} else {
		d.key = append(d.key, 0)
	}
	for _, c := range d.out {
		d.key = binary.LittleEndian.AppendUint32(d.key, uint32(c.state))
		d.key = binary.LittleEndian.AppendUint32(d.key, uint32(c.stack))
	}
	if id, ok := d.index[string(d.key)]; ok {
		return id
	}
	id := int32(len(d.sets))
	d.index[string(d.key)] = id
	d.sets = append(d.sets, slices.Clone(d.out))
	d.accept = append(d.accept, accept)
	d.plain = append(d.plain, unknown)
	lit, free := false, false
	var toks []int32
	for _, c := range d.out {
		st := &d.n.st[c.state]
		lit = lit || st.literal
		free = free || st.plainTo-1 == c.state || st.anyPlain
		if st.tok {
			for _, e := range d.n.tok[c.state] {
				if !slices.Contains(toks, e.id) {
					toks = append(toks, e.id)
				}
			}
		}
	}
	d.literal = append(d.literal, lit)
	d.free = append(d.free, free)
	if toks != nil {
		if d.toks == nil {
			d.toks = map[int32][]int32{}
		}
		d.toks[id] = toks
	}
	if len(d.slab) == 0 {
		d.slab = make([]row, rowsPerSlab)
	}
	r := &d.slab[0]
	d.slab = d.slab[1:]
	*r = unknownRow
	d.trans = append(d.trans, r)
	return id
}

// tokenStep returns the state after the token id from s, taken by the
// token edges of its configurations (dead when none takes it). Results are
// kept, so a state seen before costs a map lookup.
func (d *dfa) tokenStep(s, id int32) int32 {
	if !slices.Contains(d.toks[s], id) {
		return dead
	}
	k := [2]int32{s, id}
	if t, ok := d.tokNext[k]; ok {
		return t
	}
	d.work = d.work[:0]
	for _, c := range d.sets[s] {
		for _, e := range d.n.tok[c.state] {
			if e.id == id {
				d.work = append(d.work, config{e.to, c.stack})
			}
		}
	}
	t := d.close()
	if d.tokNext == nil {
		d.tokNext = map[[2]int32]int32{}
	}
	d.tokNext[k] = t
	return t
}

// plainNext returns the DFA state after any one plain character (a
// character a JSON string holds raw) from s, or dead when there is none or
// when the characters lead to different states. It holds when every
// configuration either sits at an unconstrained string character
// (nstate.plainTo) or consumes no byte a plain character starts with (a
// closing quote, an escape, a control byte); the successor is then the
// closure of the characters' common target, the state the bytes of any
// plain character reach.
func (d *dfa) plainNext(s int32) int32 {
	if t := d.plain[s]; t != unknown {
		return t
	}
	d.work = d.work[:0]
	for _, c := range d.sets[s] {
		st := &d.n.st[c.state]
		if st.plainTo != 0 {
			d.work = append(d.work, config{st.plainTo - 1, c.stack})
			continue
		}
		if startsPlain(st.bytes) {
			d.work = d.work[:0]
			break
		}
	}
	t := int32(dead)
	if len(d.work) > 0 {
		t = d.close()
	}
	d.plain[s] = t
	return t
}

// startsPlain reports whether an edge takes a byte a plain character can
// start with: printable ASCII other than the quote and backslash, or a
// UTF-8 lead byte.
func startsPlain(es []byteEdge) bool {
	for _, e := range es {
		if e.hi >= 0x20 && e.lo <= 0x7E && !(e.lo == e.hi && (e.lo == '"' || e.lo == '\\')) {
			return true
		}
		if e.hi >= 0xC2 && e.lo <= 0xF4 {
			return true
		}
	}
	return false
}

// acceptsPlain reports whether any configuration of s consumes a byte a
// plain character can start with.
func (d *dfa) acceptsPlain(s int32) bool {
	for _, c := range d.sets[s] {
		st := &d.n.st[c.state]
		if st.plainTo != 0 || startsPlain(st.bytes) {
			return true
		}
	}
	return false
}

// maxKeyStates bounds the automaton plainKey describes; a state whose
// plain bytes reach more gets no key.
const maxKeyStates = 1024

// plainKey describes what the short plain tokens (Vocabulary.short: plain
// characters, at most keyDepth bytes) can do from DFA state s,
// independently of the grammar: the part of the automaton the
// configurations of s reach through at most keyDepth bytes that plain
// tokens hold, with epsilon moves folded in, numbered in the order a
// breadth-first search meets it. Plain tokens never hold the quote or the
// backslash, so from inside a string they never leave it; the part is
// then a piece of the string body's automaton (a format, a pattern), the
// same in every schema that uses it and at every position of a long
// repetition. Two states with the same key accept the same short plain
// tokens. ok is false when the bytes reach a call, a return, a literal
// suffix or a token edge (the part is not self-contained) or more than
// maxKeyStates states.
//
// Only the states with an edge a plain byte can take are numbered; each
// edge records whether its target takes any byte at all (a token may end
// there, before the closing quote, though no plain byte can follow). A
// state that takes only the closing quote or an escape adds nothing to a
// plain token, so a string position that may end and one that may not (a
// bounded pattern's counts below and at its minLength, the same pattern
// without a bound) get the same key when their plain bytes go the same
// ways.
func (d *dfa) plainKey(s int32) (key string, ok bool) {
	if len(d.keyNum) < len(d.n.st) {
		// The network grows as lazy member states are made.
		d.keyNum = append(d.keyNum, make([]int32, len(d.n.st)-len(d.keyNum))...)
		d.keySeen = append(d.keySeen, make([]uint32, len(d.n.st)-len(d.keySeen))...)
	}
	// keyNum holds 1 + a state's number; the states numbered are reset on
	// return.
	defer func() {
		for _, x := range d.keyOrder {
			d.keyNum[x] = 0
		}
		d.keyOrder = d.keyOrder[:0]
	}()
	layer, next, cl, stack := d.keyLayer[:0], d.keyNext[:0], d.keyCl[:0], d.keyStack[:0]
	defer func() { d.keyLayer, d.keyNext, d.keyCl, d.keyStack = layer, next, cl, stack }()
	visit := func(x int32) uint64 {
		if i := d.keyNum[x]; i > 0 {
			return uint64(i - 1)
		}
		d.keyOrder = append(d.keyOrder, x)
		d.keyNum[x] = int32(len(d.keyOrder))
		next = append(next, x)
		return uint64(len(d.keyOrder) - 1)
	}
	// closure lists the states with an edge a plain byte can take that x
	// reaches by epsilon moves, in depth-first order; alive reports
	// whether any state it reaches takes a byte at all.
	closure := func(x int32) (alive, ok bool) {
		if d.keyEpoch++; d.keyEpoch == 0 {
			clear(d.keySeen)
			d.keyEpoch = 1
		}
		cl, stack = cl[:0], append(stack[:0], x)
		for len(stack) > 0 {
			y := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if d.keySeen[y] == d.keyEpoch {
				continue
			}
			d.keySeen[y] = d.keyEpoch
			st := &d.n.st[y]
			if len(st.calls) > 0 || st.exit || st.literal || st.tok || st.lazy {
				return false, false
			}
			if len(st.bytes) > 0 {
				alive = true
				if hasPlainEdge(st.bytes) {
					cl = append(cl, y)
				}
			}
			for k := len(st.eps) - 1; k >= 0; k-- {
				stack = append(stack, st.eps[k])
			}
		}
		return alive, true
	}
	for _, c := range d.sets[s] {
		st := &d.n.st[c.state]
		if len(st.calls) > 0 || st.exit || st.literal || st.tok {
			return "", false
		}
		if hasPlainEdge(st.bytes) {
			visit(c.state)
		}
	}
	b := binary.AppendUvarint(d.keyBuf[:0], uint64(len(next)))
	defer func() { d.keyBuf = b }()
	layer, next = next, layer
	for depth := 0; depth < keyDepth && len(layer) > 0; depth++ {
		for _, x := range layer {
			for _, e := range d.n.st[x].bytes {
				if !plainEdge(e) {
					continue
				}
				alive, ok := closure(e.to)
				if !ok {
					return "", false
				}
				b = append(b, 'e', e.lo, e.hi, 0)
				if alive {
					b[len(b)-1] = 1
				}
				b = binary.AppendUvarint(b, uint64(len(cl)))
				for _, y := range cl {
					b = binary.AppendUvarint(b, visit(y))
				}
			}
			b = append(b, ';')
			if len(d.keyOrder) > maxKeyStates {
				return "", false
			}
		}
		layer, next = next, layer[:0]
		b = append(b, '|')
	}
	return string(b), true
}

// hasPlainEdge reports whether one of es takes a byte a plain token may
// hold.
func hasPlainEdge(es []byteEdge) bool {
	for _, e := range es {
		if plainEdge(e) {
			return true
		}
	}
	return false
}

// plainEdge reports whether an edge takes any byte a plain token may hold:
// printable ASCII other than the quote and backslash, DEL (a string holds
// it raw and plainChars counts it, so an edge of DEL alone must show in the
// key), or a byte of a UTF-8 encoding.
func plainEdge(e byteEdge) bool {
	for _, r := range [...][2]byte{{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7F}, {0x80, 0xBF}, {0xC2, 0xF4}} {
		if e.lo <= r[1] && e.hi >= r[0] {
			return true
		}
	}
	return false
}
