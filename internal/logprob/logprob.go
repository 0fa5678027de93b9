// Package logprob holds what the chat layer and the reference server's
// legacy completions share to report log-probabilities: token names
// decoded once per request, and -Inf made representable in JSON.
package logprob

import (
	"math"

	"github.com/prism-local/prism/engine"
)

// Min stands for a log-probability of -Inf (or NaN), which JSON cannot
// carry; OpenAI reports very unlikely tokens with the same value.
const Min = -9999

// Finite returns v, or Min when JSON cannot carry v.
func Finite(v float32) float32 {
	if math.IsInf(float64(v), -1) || v != v {
		return Min
	}
	return v
}

// Names decodes token ids one at a time, each once per request. The zero
// value is not usable: make one with NewNames.
type Names struct {
	tok  engine.Tokenizer
	seen map[int32]string
}

// NewNames returns a Names decoding with tok.
func NewNames(tok engine.Tokenizer) *Names { return &Names{tok: tok} }

// Of returns id's own text, special tokens included; a token that is part
// of a character decodes as U+FFFD.
func (n *Names) Of(id int32) string {
	if s, ok := n.seen[id]; ok {
		return s
	}
	if n.seen == nil {
		n.seen = map[int32]string{}
	}
	s := n.tok.Decode([]int32{id}, false)
	n.seen[id] = s
	return s
}
