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

type stackNode struct{ parent, ret, depth int32 }

type dfa struct {
	n        *nfa
	stacks   []stackNode
	stackIdx map[[2]int32]int32
	sets     [][]config // per DFA state
	accept   []bool     // per DFA state: the text may end here
	free     []bool     // per DFA state: every plain token is allowed (see Vocabulary.plain)
	literal  []bool     // per DFA state: inside a literal suffix
	index    map[string]int32
	trans    []int32 // per DFA state, 256 entries

	// closure scratch
	seen    map[config]struct{}
	visited []config
	work    []config
	out     []config
	key     []byte
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

// step returns the state after byte b from state s (dead when none).
func (d *dfa) step(s int32, b byte) int32 {
	t := d.trans[int(s)<<8|int(b)]
	if t != unknown {
		return t
	}
	d.work = d.work[:0]
	for _, c := range d.sets[s] {
		for _, e := range d.n.st[c.state].bytes {
			if b >= e.lo && b <= e.hi {
				d.work = append(d.work, config{e.to, c.stack})
			}
		}
	}
	t = dead
	if len(d.work) > 0 {
		t = d.close()
	}
	d.trans[int(s)<<8|int(b)] = t
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
		st := &d.n.st[c.state]
		if len(st.bytes) > 0 {
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
	d.free = append(d.free, d.freeText(d.out))
	lit := false
	for _, c := range d.out {
		lit = lit || d.n.st[c.state].literal
	}
	d.literal = append(d.literal, lit)
	for range 256 {
		d.trans = append(d.trans, unknown)
	}
	return id
}

// freeText reports whether the configurations are in the body of a free
// string: at least one is at a free state and every other one can only
// consume a quote, a backslash or a control byte, none of which a plain
// token holds. Every plain token is then allowed.
func (d *dfa) freeText(cs []config) bool {
	any := false
	for _, c := range cs {
		st := &d.n.st[c.state]
		if st.free {
			any = true
			continue
		}
		for _, e := range st.bytes {
			if !(e.hi < 0x20 || e.lo == e.hi && (e.lo == '"' || e.lo == '\\')) {
				return false
			}
		}
	}
	return any
}
