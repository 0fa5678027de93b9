package server

import (
	"math"
	"strings"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/tools"
)

// minLogprob stands for a log-probability of -Inf, which JSON cannot
// carry; OpenAI reports very unlikely tokens with the same value.
const minLogprob = -9999

// trailToken is one generated token whose text the parser has not yet
// fully decided.
type trailToken struct {
	start, end int // its visible text (engine Token.Piece) in trail.gen
	logprob    float32
	top        []engine.TokenLogprob
	share      []byte // the part of its text that is content
	inContent  bool   // share is set (possibly empty by now, never for a non-content token)
}

// trail matches the content the tool-call parser emits back to the tokens
// that generated it, for logprobs.content. The parser (and the reasoning
// splitter in front of it) only ever drops text — think tags, harmony
// headers, tool-call text, whitespace around calls — and emits the rest in
// order, so each event's text is found in the generated text at or after
// the end of the previous event's. A token is decided once the events have
// moved past its text; its entry is then ready, with the content part of
// its text as token and bytes, so the entries' bytes concatenate to the
// content. A token whose text shows nothing (part of a character, text a
// stop string held back) goes with the next token that shows text, and is
// reported if that one is; such tokens at the very end (the EOS id) are
// not reported.
type trail struct {
	names names
	gen   []byte // forced text, then the generated tokens' visible text
	at    int    // events have been matched up to here
	toks  []trailToken
	ready []wire.TokenLogprob
}

func newTrail(tok engine.Tokenizer, forced string) *trail {
	return &trail{names: names{tok: tok}, gen: []byte(forced)}
}

// push records a generated token before its piece goes to the parser.
func (t *trail) push(tok engine.Token) {
	start := len(t.gen)
	t.gen = append(t.gen, tok.Piece...)
	t.toks = append(t.toks, trailToken{start: start, end: len(t.gen), logprob: tok.Logprob,
		top: append([]engine.TokenLogprob(nil), tok.TopLogprobs...)})
}

// match reads the events of one feed, after which the parser holds back
// held bytes at the end of the text (tools.StreamParser.Held), and moves
// the tokens they decide to ready. The events are placed last first, each
// at its latest occurrence before the next one's: the dropped text before
// an event (a tag, a call) may well contain the event's text, so the
// latest occurrence is the one it came from. Content and reasoning are
// also placed before the held text, which they cannot have come from
// though it may repeat them ("t" of "t<t", the "<t" held as a possible
// tag); a call's events come from its open region, which is held.
func (t *trail) match(ev []tools.Event, held int) {
	type span struct{ a, b int }
	pos := make([]span, len(ev))
	limit := len(t.gen)
	for i := len(ev) - 1; i >= 0; i-- {
		pos[i] = span{-1, -1}
		var text string
		switch e := ev[i]; e.Kind {
		case tools.EventContent, tools.EventReasoning:
			text = e.Text
			limit = max(t.at, min(limit, len(t.gen)-held))
		case tools.EventToolCall:
			text = e.Call.Arguments
			if text == "" {
				text = e.Call.Name
			}
		}
		if text == "" {
			continue
		}
		// Text that is not there verbatim (arguments the parser decoded
		// from a JSON string) places nothing.
		if j := strings.LastIndex(string(t.gen[t.at:limit]), text); j >= 0 {
			pos[i] = span{t.at + j, t.at + j + len(text)}
			limit = pos[i].a
		}
	}
	for i, e := range ev {
		p := pos[i]
		switch {
		case p.a >= 0:
			if e.Kind == tools.EventContent {
				t.content(p.a, p.b)
			}
			t.at = max(t.at, p.b)
		case e.Kind == tools.EventContent && e.Text != "":
			t.unplaced(e.Text)
		}
	}
	t.decide(t.at)
}

// unplaced gives content text that could not be placed (an earlier event
// was placed on the text it came from) to the newest token that shows
// text, or to the newest entry not yet sent, so the entries still spell
// the content.
func (t *trail) unplaced(text string) {
	for i := len(t.toks) - 1; i >= 0; i-- {
		if tk := &t.toks[i]; tk.start < tk.end {
			tk.share = append(tk.share, text...)
			tk.inContent = true
			return
		}
	}
	if n := len(t.ready); n > 0 {
		e := &t.ready[n-1]
		e.Token += text
		e.Bytes = append(e.Bytes, byteList([]byte(text))...)
	}
}

// content marks gen[a:b] as content in the tokens it overlaps.
func (t *trail) content(a, b int) {
	for i := range t.toks {
		tk := &t.toks[i]
		lo, hi := max(a, tk.start), min(b, tk.end)
		if lo < hi {
			tk.share = append(tk.share, t.gen[lo:hi]...)
			tk.inContent = true
		}
	}
}

// decide moves the tokens whose text ends at or before upto to ready.
func (t *trail) decide(upto int) {
	n := 0 // tokens decided
	empty := 0
	for n < len(t.toks) && t.toks[n].end <= upto {
		tk := &t.toks[n]
		n++
		if tk.start == tk.end {
			empty++ // goes with the next token that shows text
			continue
		}
		if tk.inContent {
			for _, e := range t.toks[n-1-empty : n-1] {
				t.ready = append(t.ready, t.entry(e, nil))
			}
			t.ready = append(t.ready, t.entry(*tk, tk.share))
		}
		empty = 0
	}
	n -= empty // undecided until a token with text follows
	t.toks = t.toks[:copy(t.toks, t.toks[n:])]
}

// finish decides every token left: the parser has been flushed.
func (t *trail) finish() { t.decide(len(t.gen)) }

// take returns the ready entries and forgets them.
func (t *trail) take() []wire.TokenLogprob {
	r := t.ready
	t.ready = nil
	return r
}

func (t *trail) entry(tk trailToken, share []byte) wire.TokenLogprob {
	e := wire.TokenLogprob{Token: string(share), Logprob: finite(tk.logprob), Bytes: byteList(share),
		TopLogprobs: make([]wire.TopLogprob, len(tk.top))}
	for i, alt := range tk.top {
		s := t.names.of(alt.ID)
		e.TopLogprobs[i] = wire.TopLogprob{Token: s, Logprob: finite(alt.Logprob), Bytes: byteList([]byte(s))}
	}
	return e
}

// names decodes token ids one at a time, each once per request.
type names struct {
	tok  engine.Tokenizer
	seen map[int32]string
}

// of returns id's own text, special tokens included; a token that is part
// of a character decodes as U+FFFD.
func (n *names) of(id int32) string {
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

func finite(v float32) float32 {
	if math.IsInf(float64(v), -1) || v != v {
		return minLogprob
	}
	return v
}

func byteList(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// contentLogprobs is implemented by a generation whose backend reports
// log-probabilities (the engine's; Ollama's chat refuses logprobs).
type contentLogprobs interface {
	// wantsLogprobs reports whether the request asked for them.
	wantsLogprobs() bool
	// logprobs returns the logprobs.content entries decided since the
	// last call.
	logprobs() []wire.TokenLogprob
}

// logprobsOf returns g's logprobs when the request asked for them.
func logprobsOf(g generation) (contentLogprobs, bool) {
	c, ok := g.(contentLogprobs)
	return c, ok && c.wantsLogprobs()
}

func (g *onnxGeneration) wantsLogprobs() bool           { return g.a.trail != nil }
func (g *onnxGeneration) logprobs() []wire.TokenLogprob { return g.a.trail.take() }

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
	names  names
	offset int
	pend   []trailToken // tokens without text, waiting for one with text
	out    wire.CompletionLogprobs
}

func newLegacy(tok engine.Tokenizer) *legacy { return &legacy{names: names{tok: tok}} }

// push records a token; it reports whether entries were added.
func (l *legacy) push(tok engine.Token) bool {
	tk := trailToken{logprob: tok.Logprob, top: append([]engine.TokenLogprob(nil), tok.TopLogprobs...)}
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
func (l *legacy) add(tk trailToken, text string, chosen int32) {
	top := make(map[string]float32, len(tk.top)+1)
	for _, alt := range tk.top {
		if k := l.names.of(alt.ID); !has(top, k) { // several ids may share a text: the likelier stays
			top[k] = finite(alt.Logprob)
		}
	}
	if chosen >= 0 {
		if k := l.names.of(chosen); !has(top, k) {
			top[k] = finite(tk.logprob)
		}
	}
	o := &l.out
	o.Tokens = append(o.Tokens, text)
	o.TokenLogprobs = append(o.TokenLogprobs, finite(tk.logprob))
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
