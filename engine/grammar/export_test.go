package grammar

// Piece exposes a vocabulary entry's bytes to the tests.
func (v *Vocabulary) Piece(id int32) []byte { return v.pieces[id] }

// ValidPrefix exposes validPrefix to the tests.
var ValidPrefix = validPrefix

// FullMask is Mask computed by walking the whole token trie from the
// matcher's state, without the plain-run bitmasks, for tests that check
// the shortcut changes nothing.
func (m *Matcher) FullMask(bits []uint64) (canEnd bool) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.walk(&g.vocab.all, 0, int32(len(g.vocab.all.nodes)), m.state, bits)
	g.literals(m.state, bits)
	return g.d.accept[m.state]
}

// Rules counts the masks computed so far by each rule: a walk of the
// whole trie, a plain run, a free string's body, first byte by first byte,
// and the vocabulary's shared masks.
func (g *Grammar) Rules() (walk, run, free, first, shared int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	return s[byWalk], s[byRun], s[byFree], s[byFirst], s[byShared]
}

// CharRuns counts the masks computed from a run of characters (charRun).
func (g *Grammar) CharRuns() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats[byCharRun]
}

// CompileSchemaByProof is CompileSchema with a oneOf accepted only on
// the disjointness proof, not made exclusive by negating its branches,
// for the tests of the proof.
func CompileSchemaByProof(v *Vocabulary, schema []byte, o Options) (*Grammar, error) {
	o.proofOnly = true
	return CompileSchema(v, schema, o)
}

// StateID exposes the matcher's DFA state, so that the tests' searches
// can tell positions apart.
func (m *Matcher) StateID() int32 { return m.state }
