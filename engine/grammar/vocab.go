package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/prism-local/prism/internal/utf8seq"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/prism-local/prism/engine/tokenizer"
)

// Vocabulary is what a grammar is matched against: the bytes every token
// adds to the text, arranged as a token trie. Build it once per tokenizer
// (it takes a fraction of a second for a 150k vocabulary) and share it; it
// is safe for concurrent use. Besides the tokens it keeps the masks of
// format and pattern states that every grammar compiled over it shares
// (up to 64 MiB), so sharing one Vocabulary per tokenizer also shares
// that work.
//
// Special and added tokens (control tokens such as <|im_end|> or
// <tool_call>) and tokens that add no bytes are never allowed inside
// constrained text.
type Vocabulary struct {
	size    int
	pieces  [][]byte
	all     trie
	depth   int // longest piece
	cleanUp bool

	// runs[n] marks the plain tokens of 1 to n characters (n up to
	// maxRun): tokens made only of characters a JSON string holds raw (no
	// quote, backslash or control character; the last one may be
	// incomplete and counts as one). rest is the trie of every other
	// token. Where a string allows any n characters next, every token of
	// runs[n] is allowed, so a mask there copies it and walks only rest.
	runs [maxRun + 1][]uint64
	rest trie

	// first[b], for a byte b that is a plain character on its own, marks
	// the plain tokens (of up to maxRun characters) that start with b;
	// asciiFirst is their union. allRoot and restRoot index the subtree of
	// each first byte in all and rest (-1: none).
	first      [128][]uint64
	asciiFirst []uint64
	allRoot    [256]int32
	restRoot   [256]int32

	// with[b], for a plain ASCII byte b, marks the tokens of runs[maxRun]
	// that hold b; chars[n] is the trie of the plain tokens of exactly n
	// characters (n up to maxRun). A state that takes n characters of all
	// but a few ASCII ones, and then fewer, takes its short tokens from
	// runs[n] less with[b] and walks only chars[n+1] and on (byChars).
	with  [128][]uint64
	chars [maxRun + 1]trie

	// literals are the special and added tokens (EOS excepted) with their
	// text: allowed only inside a grammar's literal suffix or where a
	// grammar names them by id. eos are the EOS ids with their text, for
	// grammars whose syntax names one (harmony's <|call|> ends the turn).
	literals []literal
	eos      []literal

	// short marks the plain tokens of at most keyDepth bytes; long is the
	// trie of every other token. A mask from a state with a plainKey
	// takes the short ones from shared and walks long.
	short []uint64
	long  trie

	// shared caches the short plain part of masks by plainKey, for every
	// grammar over the vocabulary: the states of a format or pattern are
	// walked once per vocabulary, not once per schema.
	shared sharedMasks
}

// keyDepth is the length in bytes up to which plainKey describes a state:
// the short plain tokens' bound.
const keyDepth = 16

// maxSharedBytes caps the memory a Vocabulary spends on shared masks;
// past it, new keys are not stored.
const maxSharedBytes = 64 << 20

// sharedMasks maps a plainKey to the short plain tokens its states accept.
type sharedMasks struct {
	mu    sync.Mutex
	m     map[string][]uint64
	bytes int
}

func (c *sharedMasks) get(key string) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

// put stores mk (which it keeps) under key unless the cap is reached.
func (c *sharedMasks) put(key string, mk []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok || c.bytes+8*len(mk)+len(key) > maxSharedBytes {
		return
	}
	if c.m == nil {
		c.m = map[string][]uint64{}
	}
	c.m[key] = mk
	c.bytes += 8*len(mk) + len(key)
}

type literal struct {
	id    int32
	piece []byte
}

// trie is a token trie in preorder.
type trie struct {
	nodes []trieNode
	ids   []int32
}

// trieNode is one byte of the token trie, stored in preorder: a node's
// subtree is nodes[i+1 : skip]. The tokens whose bytes end here are
// ids[first : first+n].
type trieNode struct {
	b     byte
	depth uint16
	skip  int32
	first int32
	n     int32
}

// NewVocabulary builds the vocabulary of a tokenizer loaded by
// engine/tokenizer. Its size is the tokenizer's vocabulary size.
func NewVocabulary(tok *tokenizer.Tokenizer) (*Vocabulary, error) {
	if tok == nil {
		return nil, errors.New("grammar: NewVocabulary needs a tokenizer")
	}
	n := tok.VocabSize()
	pieces := make([][]byte, n)
	any := false
	var lits, eos []literal
	for id := range int32(n) {
		if tok.IsSpecial(id) || tok.IsAdded(id) {
			if p, ok := tok.Piece(id); ok && len(p) > 0 {
				if slices.Contains(tok.EOS(), id) {
					eos = append(eos, literal{id, p})
				} else {
					lits = append(lits, literal{id, p})
				}
			}
			continue
		}
		if p, ok := tok.Piece(id); ok {
			pieces[id], any = p, true
		}
	}
	if !any {
		return nil, errors.New("grammar: the tokenizer's decoder has no per-token form, so its tokens cannot be matched against a grammar")
	}
	v := newVocabulary(pieces)
	v.cleanUp = tok.Decoding().CleanUp
	v.literals, v.eos = lits, eos
	return v, nil
}

// NewVocabularyFromPieces builds a vocabulary from the bytes each id adds
// to the text; a nil or empty piece is never allowed (use it for special
// tokens). special gives the text of special tokens that may spell a
// literal suffix (nil for none). It suits tokenizers other than
// engine/tokenizer's, such as the byte tokenizer of engine/enginetest.
func NewVocabularyFromPieces(pieces [][]byte, special map[int32]string) *Vocabulary {
	v := newVocabulary(slices.Clone(pieces))
	for id, text := range special {
		v.literals = append(v.literals, literal{id, []byte(text)})
	}
	slices.SortFunc(v.literals, func(a, b literal) int { return int(a.id - b.id) })
	return v
}

// maxRun is the longest plain token, in characters, that masks allow
// through Vocabulary.runs; longer ones are walked in the trie.
const maxRun = 24

func newVocabulary(pieces [][]byte) *Vocabulary {
	words := (len(pieces) + 63) / 64
	v := &Vocabulary{size: len(pieces), pieces: pieces}
	byLen := make([][]int32, maxRun+1)
	var all, rest, long []int32
	v.short = make([]uint64, words)
	for id, p := range pieces {
		if len(p) == 0 || len(p) >= 1<<16 {
			pieces[id] = nil
			continue
		}
		all = append(all, int32(id))
		v.depth = max(v.depth, len(p))
		n := plainChars(p)
		if n > 0 && len(p) <= keyDepth {
			v.short[id>>6] |= 1 << (id & 63)
		} else {
			long = append(long, int32(id))
		}
		if n > 0 && n <= maxRun {
			byLen[n] = append(byLen[n], int32(id))
			for _, b := range p {
				if b < 0x80 {
					if v.with[b] == nil {
						v.with[b] = make([]uint64, words)
					}
					v.with[b][id>>6] |= 1 << (id & 63)
				}
			}
			if b := p[0]; b < 0x80 {
				if v.first[b] == nil {
					v.first[b] = make([]uint64, words)
				}
				v.first[b][id>>6] |= 1 << (id & 63)
			}
		} else {
			rest = append(rest, int32(id))
		}
	}
	acc := make([]uint64, words)
	for n := 1; n <= maxRun; n++ {
		for _, id := range byLen[n] {
			acc[id>>6] |= 1 << (id & 63)
		}
		v.runs[n] = slices.Clone(acc)
	}
	v.runs[0] = make([]uint64, words)
	v.asciiFirst = make([]uint64, words)
	for _, f := range v.first {
		for i, w := range f {
			v.asciiFirst[i] |= w
		}
	}
	v.all = buildTrie(pieces, all)
	// The per-count tries take their ids in byte order, as v.all lists
	// them, so their sorts find them sorted.
	count := make([]uint8, len(pieces))
	for n := 1; n <= maxRun; n++ {
		for _, id := range byLen[n] {
			count[id] = uint8(n)
		}
		byLen[n] = byLen[n][:0]
	}
	for _, id := range v.all.ids {
		if n := count[id]; n > 0 {
			byLen[n] = append(byLen[n], id)
		}
	}
	for n := 1; n <= maxRun; n++ {
		v.chars[n] = buildTrie(pieces, byLen[n])
	}
	v.rest = buildTrie(pieces, rest)
	v.long = buildTrie(pieces, long)
	v.allRoot, v.restRoot = v.all.roots(), v.rest.roots()
	return v
}

// plainChars counts the characters of p when they are characters a JSON
// string holds unescaped, the last one possibly incomplete (the start of a
// valid UTF-8 encoding, counted as one); otherwise it returns 0. From the
// body of a free string such a token is always allowed.
func plainChars(p []byte) int {
	for _, b := range p {
		if b < 0x20 || b == '"' || b == '\\' {
			return 0
		}
	}
	k := 0
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		if r == utf8.RuneError && n <= 1 {
			if validPrefix(p) {
				return k + 1
			}
			return 0
		}
		p = p[n:]
		k++
	}
	return k
}

// validPrefix reports whether p (1 to 3 bytes) can be continued into the
// UTF-8 encoding of a scalar value.
func validPrefix(p []byte) bool {
	if len(p) == 0 || len(p) > 3 {
		return false
	}
	need, lo, hi := utf8seq.Tail(p[0])
	if need == 0 {
		return false
	}
	if len(p) > need {
		return false
	}
	for i := 1; i < len(p); i++ {
		if p[i] < lo || p[i] > hi {
			return false
		}
		lo, hi = 0x80, 0xBF
	}
	return true
}

func buildTrie(pieces [][]byte, order []int32) trie {
	var v trie
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	// Sorted pieces list the trie in preorder: each piece adds the nodes
	// past its common prefix with the previous one. A first pass counts
	// them, so the trie is allocated once (a vocabulary builds 27 tries).
	var prev []byte
	total := 0
	for _, id := range order {
		p := pieces[id]
		common := 0
		for common < len(p) && common < len(prev) && p[common] == prev[common] {
			common++
		}
		total += len(p) - common
		prev = p
	}
	v.nodes = make([]trieNode, 0, total)
	v.ids = make([]int32, 0, len(order))
	var path []int32 // node index per depth-1 along the current piece
	prev = nil
	for _, id := range order {
		p := pieces[id]
		common := 0
		for common < len(p) && common < len(prev) && p[common] == prev[common] {
			common++
		}
		path = path[:common]
		for i := common; i < len(p); i++ {
			path = append(path, int32(len(v.nodes)))
			v.nodes = append(v.nodes, trieNode{b: p[i], depth: uint16(i + 1)})
		}
		last := &v.nodes[path[len(p)-1]]
		if last.n == 0 {
			last.first = int32(len(v.ids))
		}
		v.ids = append(v.ids, id)
		last.n++
		prev = p
	}
	// skip: the next node at the same depth or shallower.
	var open []int32
	for i := range v.nodes {
		d := v.nodes[i].depth
		for len(open) > 0 && v.nodes[open[len(open)-1]].depth >= d {
			v.nodes[open[len(open)-1]].skip = int32(i)
			open = open[:len(open)-1]
		}
		open = append(open, int32(i))
	}
	for _, i := range open {
		v.nodes[i].skip = int32(len(v.nodes))
	}
	return v
}

// roots indexes the depth-1 node of each first byte (-1: none).
func (t *trie) roots() (r [256]int32) {
	for i := range r {
		r[i] = -1
	}
	for i := 0; i < len(t.nodes); i = int(t.nodes[i].skip) {
		r[t.nodes[i].b] = int32(i)
	}
	return r
}

// Size is the number of token ids.
func (v *Vocabulary) Size() int { return v.size }

// String describes the vocabulary.
func (v *Vocabulary) String() string {
	return fmt.Sprintf("vocabulary of %d ids (%d in the trie, %d nodes; %d not short plain string text, %d not of up to %d bytes)", v.size, len(v.all.ids), len(v.all.nodes), len(v.rest.ids), len(v.long.ids), keyDepth)
}

// literalPiece returns the text of a special or added token, or nil.
func (v *Vocabulary) literalPiece(id int32) []byte {
	i, ok := slices.BinarySearchFunc(v.literals, id, func(l literal, id int32) int { return int(l.id - id) })
	if !ok {
		return nil
	}
	return v.literals[i].piece
}

// tokenByText finds the special or added token whose whole text is text;
// eos says it is an EOS id (the engine ends the text on it).
func (v *Vocabulary) tokenByText(text string) (id int32, eos, ok bool) {
	for _, l := range v.literals {
		if string(l.piece) == text {
			return l.id, false, true
		}
	}
	for _, l := range v.eos {
		if string(l.piece) == text {
			return l.id, true, true
		}
	}
	return 0, false, false
}
