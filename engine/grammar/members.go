package grammar

import (
	"encoding/binary"
	"math/bits"
)

// An object's members may come in any order, each listed name at most
// once. The position between two members is a state of the set of listed
// names written so far and the number of extra members (told apart up to
// what maxProperties needs): 2^n sets for n names, so these states are
// made lazily, when the DFA first reaches one (nfa.expand), and each
// member is a sub-network called from them (its return state is the next
// set's state), so a member's key and value are built once per name, not
// once per set.

// memberSet describes one object's members for the lazy states.
type memberSet struct {
	// first and comma are, per listed name, the entries of the member's
	// sub-network without and with a leading comma; ok says whether the
	// member can be written at all (its value is satisfiable), set when
	// the network is trimmed.
	first, comma []int32
	ok           []bool
	req          []bool
	// The same for the classes of extra members (additionalProperties,
	// patternProperties).
	xFirst, xComma []int32
	xOK            []bool
	minP, maxP     int   // maxP < 0: no upper bound
	end            int32 // the state after the closing brace
}

// memberKey names a lazy state: the object, the extra members written
// (capped) and the set of listed names written.
type memberKey struct {
	obj, extra int32
	set        []uint64
}

// memberState returns the state of object obj with the names in set and
// extra extra members written, making it (lazy) on first use.
func (n *nfa) memberState(obj, extra int32, set []uint64) int32 {
	b := binary.LittleEndian.AppendUint32(nil, uint32(obj))
	b = binary.LittleEndian.AppendUint32(b, uint32(extra))
	for _, w := range set {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	if s, ok := n.lazyIdx[string(b)]; ok {
		return s
	}
	if n.lazyIdx == nil {
		n.lazyIdx, n.lazy = map[string]int32{}, map[int32]memberKey{}
	}
	s := n.add()
	n.st[s].lazy = true
	n.lazyIdx[string(b)] = s
	n.lazy[s] = memberKey{obj, extra, set}
	return s
}

// expand gives lazy state s its edges: the closing brace when the object
// may end there, and a call of every member that can follow and still
// lead to a complete object.
func (n *nfa) expand(s int32) {
	if _, ok := n.counting[s]; ok {
		n.expandCount(s)
		return
	}
	k := n.lazy[s]
	delete(n.lazy, s)
	n.st[s].lazy = false
	o := &n.objs[k.obj]
	start := k.extra == 0 && count(k.set) == 0
	if o.complete(k.set, int(k.extra)) {
		n.edge(s, '}', '}', o.end)
	}
	for i := range o.first {
		if !o.ok[i] || has(k.set, i) {
			continue
		}
		set := with(k.set, i)
		if !o.productive(set, int(k.extra)) {
			continue
		}
		t := n.memberState(k.obj, k.extra, set)
		sub := o.comma[i]
		if start {
			sub = o.first[i]
		}
		n.st[s].calls = append(n.st[s].calls, callEdge{sub, t})
	}
	extra := o.nextExtra(count(k.set), int(k.extra))
	if extra < 0 || !o.productive(k.set, extra) {
		return
	}
	for j := range o.xFirst {
		if !o.xOK[j] {
			continue
		}
		t := n.memberState(k.obj, int32(extra), k.set)
		sub := o.xComma[j]
		if start {
			sub = o.xFirst[j]
		}
		n.st[s].calls = append(n.st[s].calls, callEdge{sub, t})
	}
}

// nextExtra is the extra count after one more extra member, -1 when
// maxProperties leaves no room. Without an upper bound only "none" and
// "some" are told apart: extra members may repeat a name, which a
// validator reads as one member, so toward minProperties they count as
// one at most.
func (o *memberSet) nextExtra(listed, extra int) int {
	switch {
	case o.maxP < 0:
		return 1
	case listed+extra+1 > o.maxP:
		return -1
	}
	return extra + 1
}

// complete reports whether the object may close with these members.
func (o *memberSet) complete(set []uint64, extra int) bool {
	for i, r := range o.req {
		if r && !has(set, i) {
			return false
		}
	}
	return count(set)+min(extra, 1) >= o.minP
}

// productive reports whether some members can follow these and close
// the object: every required name left can be written, and some number
// of the optional names left (and maybe one extra member) meets
// minProperties without passing maxProperties.
func (o *memberSet) productive(set []uint64, extra int) bool {
	base, opt := count(set), 0
	for i := range o.first {
		switch {
		case has(set, i):
		case o.req[i] && !o.ok[i]:
			return false
		case o.req[i]:
			base++
		case o.ok[i]:
			opt++
		}
	}
	fits := func(a, x int) bool {
		return a <= opt && (o.maxP < 0 || base+extra+a+x <= o.maxP)
	}
	if fits(max(0, o.minP-base-min(extra, 1)), 0) {
		return true
	}
	if extra > 0 || !anyTrue(o.xOK) {
		return false
	}
	return fits(max(0, o.minP-base-1), 1)
}

// lazyProductive is productive for a lazy state while the network is
// trimmed: the members' own productivity comes from prod.
func (n *nfa) lazyProductive(s int32, prod []bool) bool {
	if k, ok := n.counting[s]; ok {
		return prod[n.strs[k[0]].close]
	}
	k := n.lazy[s]
	o := &n.objs[k.obj]
	o.settle(prod)
	return prod[o.end] && o.productive(k.set, int(k.extra))
}

// settle records which members can be written, from the productive states.
func (o *memberSet) settle(prod []bool) {
	for i := range o.first {
		o.ok[i] = prod[o.first[i]] && prod[o.comma[i]]
	}
	for j := range o.xFirst {
		o.xOK[j] = prod[o.xFirst[j]] && prod[o.xComma[j]]
	}
}

func anyTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}

func has(set []uint64, i int) bool { return set[i/64]&(1<<(i%64)) != 0 }

func with(set []uint64, i int) []uint64 {
	out := append([]uint64(nil), set...)
	out[i/64] |= 1 << (i % 64)
	return out
}

func count(set []uint64) int {
	c := 0
	for _, w := range set {
		c += bits.OnesCount64(w)
	}
	return c
}

// members builds the lazy states of an object whose listed names are
// given with their member sub-networks: it returns the first state after
// the opening brace (and its whitespace).
func (c *schemaCompiler) members(o memberSet) int32 {
	n := c.n
	o.ok = make([]bool, len(o.first))
	o.xOK = make([]bool, len(o.xFirst))
	n.objs = append(n.objs, o)
	return n.memberState(int32(len(n.objs)-1), 0, make([]uint64, (len(o.first)+63)/64))
}

// Long strings. A string with a length bound above lazyLength counts its
// characters in states made lazily too: state c (c characters read)
// takes one more character to state c+1 while the upper bound allows,
// and the closing quote from minLength on; without an upper bound the
// count stops at minLength, whose state takes any characters. So a
// maxLength of 100,000 costs nothing until a string grows, and then a
// few states per character written, instead of its whole chain at
// compile time.

// lazyLength is the bound above which a plain string's length is
// counted lazily; shorter chains are built when the schema compiles.
const lazyLength = 256

// countedString describes one lazily counted string.
type countedString struct {
	minL, maxL int   // maxL < 0: no upper bound
	close      int32 // the closing quote's entry
}

// countState returns the state of string str after c characters, making
// it (lazy) on first use.
func (n *nfa) countState(str, c int32) int32 {
	k := [2]int32{str, c}
	if s, ok := n.countIdx[k]; ok {
		return s
	}
	if n.countIdx == nil {
		n.countIdx, n.counting = map[[2]int32]int32{}, map[int32][2]int32{}
	}
	s := n.add()
	n.st[s].lazy = true
	n.countIdx[k] = s
	n.counting[s] = k
	return s
}

// expandCount gives the counted string's state s its edges.
func (n *nfa) expandCount(s int32) {
	k := n.counting[s]
	delete(n.counting, s)
	n.st[s].lazy = false
	str, c := n.strs[k[0]], int(k[1])
	if c >= str.minL {
		n.eps(s, str.close)
	}
	switch {
	case str.maxL < 0 && c >= str.minL:
		n.jsonChar(s, s, allRunes) // any number of characters more
	case str.maxL < 0 || c < str.maxL:
		n.jsonChar(s, n.countState(k[0], k[1]+1), allRunes)
	}
}

// countedString matches a JSON string of minL to maxL characters (maxL < 0:
// no upper bound), counted lazily.
func (c *schemaCompiler) countedString(minL, maxL int) frag {
	n := c.n
	open, close := n.lit(`"`), n.lit(`"`)
	n.strs = append(n.strs, countedString{minL: max(minL, 0), maxL: maxL, close: close.in})
	n.eps(open.out, n.countState(int32(len(n.strs)-1), 0))
	return frag{open.in, close.out}
}
