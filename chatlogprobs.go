package prism

import (
	"strings"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/logprob"
	"github.com/prism-local/prism/tools"
)

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
	names *logprob.Names
	gen   []byte // forced text, then the generated tokens' visible text
	at    int    // events have been matched up to here
	toks  []trailToken
	ready []TokenLogprob
}

func newTrail(tok engine.Tokenizer, forced string) *trail {
	return &trail{names: logprob.NewNames(tok), gen: []byte(forced)}
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
		e.Bytes = append(e.Bytes, text...)
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
func (t *trail) take() []TokenLogprob {
	r := t.ready
	t.ready = nil
	return r
}

func (t *trail) entry(tk trailToken, share []byte) TokenLogprob {
	e := TokenLogprob{Token: string(share), Logprob: logprob.Finite(tk.logprob), Bytes: []byte(string(share)),
		Top: make([]TopLogprob, len(tk.top))}
	for i, alt := range tk.top {
		e.Top[i] = TopLogprob{Token: t.names.Of(alt.ID), Logprob: logprob.Finite(alt.Logprob)}
	}
	return e
}
