package server

import (
	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/internal/logprob"
)

// tokenLogprob is one generated token's log-probabilities, kept until
// the legacy list places it.
type tokenLogprob struct {
	logprob float32
	top     []engine.TokenLogprob
}

func byteList(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// wireLogprobs appends the chat layer's logprobs entries to dst in the
// wire's shape.
func wireLogprobs(dst []wire.TokenLogprob, entries []prism.TokenLogprob) []wire.TokenLogprob {
	for _, e := range entries {
		w := wire.TokenLogprob{Token: e.Token, Logprob: e.Logprob, Bytes: byteList(e.Bytes), TopLogprobs: make([]wire.TopLogprob, len(e.Top))}
		for i, alt := range e.Top {
			w.TopLogprobs[i] = wire.TopLogprob{Token: alt.Token, Logprob: alt.Logprob, Bytes: byteList([]byte(alt.Token))}
		}
		dst = append(dst, w)
	}
	return dst
}

// logprobsChunk is a chunk whose choice carries the logprobs of the
// content tokens decided since the last one; none leaves logprobs null.
func logprobsChunk(enc *wire.ChunkEncoder, d wire.Delta, finish string, entries []wire.TokenLogprob) wire.ChatChunk {
	c := enc.Chunk(d, finish)
	if len(entries) > 0 {
		c.Choices[0].Logprobs = &wire.Logprobs{Content: entries}
	}
	return c
}

// legacy builds the logprobs of /v1/completions: parallel lists over the
// tokens, each token as the text it made visible (so tokens joined are the
// text and text_offset indexes it), top_logprobs as maps from a token's own
// text to its log-probability holding the alternatives and the chosen
// token, as OpenAI's legacy API does. Tokens that show no text go with the
// next one that does, as in chat; trailing ones (the EOS id) are not
// reported.
type legacy struct {
	names  *logprob.Names
	offset int
	pend   []tokenLogprob // tokens without text, waiting for one with text
	out    wire.CompletionLogprobs
}

func newLegacy(tok engine.Tokenizer) *legacy { return &legacy{names: logprob.NewNames(tok)} }

// push records a token; it reports whether entries were added.
func (l *legacy) push(tok engine.Token) bool {
	tk := tokenLogprob{logprob: tok.Logprob, top: append([]engine.TokenLogprob(nil), tok.TopLogprobs...)}
	if len(tok.Piece) == 0 {
		l.pend = append(l.pend, tk)
		return false
	}
	for _, p := range l.pend {
		l.add(p, "", -1)
	}
	l.pend = l.pend[:0]
	l.add(tk, string(tok.Piece), tok.ID)
	return true
}

// add appends one token; chosen is its id, or -1 for a token without text
// (its own text is then not a key of its map).
func (l *legacy) add(tk tokenLogprob, text string, chosen int32) {
	top := make(map[string]float32, len(tk.top)+1)
	for _, alt := range tk.top {
		if k := l.names.Of(alt.ID); !has(top, k) { // several ids may share a text: the likelier stays
			top[k] = logprob.Finite(alt.Logprob)
		}
	}
	if chosen >= 0 {
		if k := l.names.Of(chosen); !has(top, k) {
			top[k] = logprob.Finite(tk.logprob)
		}
	}
	o := &l.out
	o.Tokens = append(o.Tokens, text)
	o.TokenLogprobs = append(o.TokenLogprobs, logprob.Finite(tk.logprob))
	o.TopLogprobs = append(o.TopLogprobs, top)
	o.TextOffset = append(o.TextOffset, l.offset)
	l.offset += len(text)
}

// take returns the entries so far and starts a new list.
func (l *legacy) take() *wire.CompletionLogprobs {
	out := l.out
	l.out = wire.CompletionLogprobs{}
	if out.Tokens == nil {
		out = wire.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	}
	return &out
}

func has(m map[string]float32, k string) bool {
	_, ok := m[k]
	return ok
}
