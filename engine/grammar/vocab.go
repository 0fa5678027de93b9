package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/prism-local/prism/engine/tokenizer"
)

// Vocabulary is what a grammar is matched against: the bytes every token
// adds to the text, arranged as a token trie. Build it once per tokenizer
// (it takes a fraction of a second for a 150k vocabulary) and share it; it
// is immutable and safe for concurrent use.
//
// Special and added tokens (control tokens such as <|im_end|> or
// <tool_call>) and tokens that add no bytes are never allowed inside
// constrained text.
type Vocabulary struct {
	size    int
	pieces  [][]byte
	nodes   []trieNode
	ids     []int32
	depth   int // longest piece
	cleanUp bool
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
	for id := range int32(n) {
		if tok.IsSpecial(id) || tok.IsAdded(id) {
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
	return v, nil
}

// NewVocabularyFromPieces builds a vocabulary from the bytes each id adds
// to the text; a nil or empty piece is never allowed (use it for special
// tokens). It suits tokenizers other than engine/tokenizer's, such as the
// byte tokenizer of engine/enginetest.
func NewVocabularyFromPieces(pieces [][]byte) *Vocabulary {
	return newVocabulary(slices.Clone(pieces))
}

func newVocabulary(pieces [][]byte) *Vocabulary {
	v := &Vocabulary{size: len(pieces), pieces: pieces}
	order := make([]int32, 0, len(pieces))
	for id, p := range pieces {
		if len(p) > 0 && len(p) < 1<<16 {
			order = append(order, int32(id))
		} else {
			pieces[id] = nil
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	// Sorted pieces list the trie in preorder: each piece adds the nodes
	// past its common prefix with the previous one.
	var path []int32 // node index per depth-1 along the current piece
	var prev []byte
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
		v.depth = max(v.depth, len(p))
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

// Size is the number of token ids.
func (v *Vocabulary) Size() int { return v.size }

// String describes the vocabulary.
func (v *Vocabulary) String() string {
	return fmt.Sprintf("vocabulary of %d ids (%d in the trie, %d nodes)", v.size, len(v.ids), len(v.nodes))
}
