package grammar

import (
	"fmt"
	"strings"

	"github.com/prism-local/prism/internal/jsonorder"
)

// Tool-call syntaxes with token markers (CallSyntax.Tokens) and raw names
// (CallSyntax.NameEnd): DeepSeek-V3 writes
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
//
// and harmony <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>.
// Each marker is one special or added token; the decoded text shows its
// text, but so would plain tokens spelling it, and the model means the
// token. So a marker is a token edge of the network (matched by id, see
// tokenEdge) and never bytes, and the free text before a lazy call may
// hold the marker tokens but not their spelling: in the decoded text a
// marker is always the token, and a call the tools package finds there
// is always one the grammar constrained.

// part is a piece of a syntax string: text, or one marker token.
type part struct {
	text string
	at   int // offset in the string split
	tok  bool
	id   int32
	eos  bool // the token is an EOS id: the text ends on it
	ok   bool // the token was found in the vocabulary
}

// markers are a syntax's marker texts resolved against a vocabulary.
type markers struct {
	texts []string
	ids   []int32
	eos   []bool
	found []bool
}

func resolveMarkers(v *Vocabulary, texts []string) markers {
	var mk markers
	for _, t := range texts {
		if t == "" {
			continue
		}
		id, eos, ok := v.tokenByText(t)
		mk.texts = append(mk.texts, t)
		mk.ids = append(mk.ids, id)
		mk.eos = append(mk.eos, eos)
		mk.found = append(mk.found, ok)
	}
	return mk
}

// split cuts s into text and marker parts, taking the longest marker
// where several start at the same byte.
func (mk markers) split(s string) []part {
	var out []part
	start := 0
	for i := 0; i < len(s); {
		best := -1
		for k, t := range mk.texts {
			if strings.HasPrefix(s[i:], t) && (best < 0 || len(t) > len(mk.texts[best])) {
				best = k
			}
		}
		if best < 0 {
			i++
			continue
		}
		if i > start {
			out = append(out, part{text: s[start:i], at: start})
		}
		t := mk.texts[best]
		out = append(out, part{text: t, at: i, tok: true, id: mk.ids[best], eos: mk.eos[best], ok: mk.found[best]})
		i += len(t)
		start = i
	}
	if start < len(s) {
		out = append(out, part{text: s[start:], at: start})
	}
	return out
}

// checkParts refuses parts the network cannot hold: a marker missing
// from the vocabulary, or an EOS marker (the engine ends the text on it,
// so nothing can be written after it).
func checkParts(field string, ps []part) error {
	for _, p := range ps {
		switch {
		case p.tok && !p.ok:
			return fmt.Errorf("grammar: CallSyntax.%s: the vocabulary has no token %q", field, p.text)
		case p.eos:
			return fmt.Errorf("grammar: CallSyntax.%s: %q is an EOS token of this vocabulary, which only Close may end with", field, p.text)
		}
	}
	return nil
}

// parts matches ps in order: literal text as bytes (plain tokens only),
// markers by id.
func (c *schemaCompiler) parts(ps []part) frag {
	n := c.n
	fs := make([]frag, 0, len(ps))
	for _, p := range ps {
		if p.tok {
			fs = append(fs, n.token(p.id))
		} else {
			fs = append(fs, n.lit(p.text))
		}
	}
	return n.seq(fs...)
}

// compileMarked is CompileToolCalls for a syntax with token markers or
// raw names.
func compileMarked(v *Vocabulary, tools []Tool, o CallOptions) (*Grammar, error) {
	sx := o.Syntax
	switch {
	case v == nil:
		return nil, fmt.Errorf("grammar: no vocabulary")
	case sx.WholeAnswer:
		return nil, fmt.Errorf("grammar: CallSyntax.WholeAnswer cannot be combined with Tokens or NameEnd")
	case sx.NameEnd == "" && sx.ArgsKey == "":
		return nil, fmt.Errorf("grammar: CallSyntax needs NameEnd (a raw name) or ArgsKey (a JSON name)")
	}
	mk := resolveMarkers(v, sx.Tokens)
	full := sx.Begin + sx.Open
	head := mk.split(full)
	closing := mk.split(sx.Close)
	closeEnds := len(closing) > 0 && closing[len(closing)-1].eos && closing[len(closing)-1].ok
	if closeEnds {
		// The engine ends the text on the last token of Close: the text
		// can hold nothing after the first call.
		closing = closing[:len(closing)-1]
		if sx.End != "" {
			return nil, fmt.Errorf("grammar: CallSyntax.Close ends with the EOS token %q, so End %q could never be written", sx.Close, sx.End)
		}
	}
	sep, open, nameEnd, end := mk.split(sx.Sep), mk.split(sx.Open), mk.split(sx.NameEnd), mk.split(sx.End)
	for _, f := range []struct {
		name string
		ps   []part
	}{{"Begin+Open", head}, {"Close", closing}, {"Sep", sep}, {"NameEnd", nameEnd}, {"End", end}} {
		if err := checkParts(f.name, f.ps); err != nil {
			return nil, err
		}
	}
	var trig []part
	if o.Lazy {
		trig = mk.split(sx.Trigger)
		switch {
		case sx.Trigger == "" || !strings.HasPrefix(full, sx.Trigger):
			return nil, fmt.Errorf("grammar: CallSyntax.Trigger %q must be a non-empty prefix of Begin+Open %q", sx.Trigger, full)
		case !trig[0].tok:
			return nil, fmt.Errorf("grammar: CallSyntax.Trigger %q must start with one of Tokens", sx.Trigger)
		}
		for _, p := range head {
			if p.tok && p.at < len(sx.Trigger) && len(sx.Trigger) < p.at+len(p.text) {
				return nil, fmt.Errorf("grammar: CallSyntax.Trigger %q ends inside the marker %q", sx.Trigger, p.text)
			}
		}
	}

	c := newSchemaCompiler(&jsonorder.Value{Kind: jsonorder.Bool, Bool: true}, Options{After: o.After, AfterOpen: o.AfterOpen})
	n := c.n
	var bodies, argSubs []int32
	for i, t := range tools {
		args, err := c.toolArgs(t, i)
		if err != nil {
			return nil, err
		}
		argSubs = append(argSubs, args)
		if sx.NameEnd == "" {
			bodies = append(bodies, c.callBody(t.Name, sx.ArgsKey, args))
			continue
		}
		if !rawName(t.Name) {
			return nil, &SchemaError{Param: fmt.Sprintf("tools[%d].function.name", i),
				Message: fmt.Sprintf("the name %q cannot be written in this tool-call format: use ASCII letters, digits, '_', '-' and '.'", t.Name)}
		}
		sub := n.add()
		c.finishSub(sub, n.seq(n.lit(t.Name), c.parts(nameEnd), n.call(args)))
		bodies = append(bodies, sub)
	}
	if c.err != nil {
		return nil, c.err
	}
	if err := c.callable(tools, argSubs); err != nil {
		return nil, err
	}
	// One call after its Open: NAME NameEnd ARGS Close (or the JSON body).
	rest := func() frag {
		alts := make([]frag, len(bodies))
		for i, b := range bodies {
			alts[i] = n.call(b)
		}
		if sx.NameEnd == "" {
			return n.seq(c.gap(), n.alt(alts...), c.gap(), c.parts(closing))
		}
		return n.seq(n.alt(alts...), c.parts(closing))
	}
	listFrom := func(head []part) frag {
		fs := []frag{c.parts(head), rest()}
		if o.Parallel && !closeEnds {
			fs = append(fs, n.star(n.seq(c.parts(sep), c.parts(open), rest())))
		}
		return n.seq(append(fs, c.parts(end))...)
	}
	entry := n.add()
	if !o.Lazy {
		c.finishSub(entry, listFrom(head))
	} else {
		// The trigger's first token, then the rest of the list as written.
		tail := listFrom(append(trig[1:], mk.split(full[len(sx.Trigger):])...))
		tIn := n.add()
		n.tokenEdge(tIn, trig[0].id, tail.in)
		if o.Content != nil {
			value, err := c.contentValue(o.Content, o.ContentParam)
			if err != nil {
				return nil, err
			}
			cb := mk.split(sx.ContentBegin)
			if err := checkParts("ContentBegin", cb); err != nil {
				return nil, err
			}
			c.finishSub(entry, n.alt(n.seq(c.parts(cb), n.call(value)), frag{tIn, tail.out}))
		} else {
			free := c.freeMarked(mk, sx.Guard, trig[0].id, len(trig) > 1, tail.in)
			n.eps(tail.out, free.out)
			c.finishSub(entry, free)
		}
	}
	g, err := c.finish(v, entry)
	if err != nil {
		return nil, err
	}
	if o.Written != "" {
		written := mk.split(o.Written)
		if err := checkParts("Written", written); err != nil {
			return nil, err
		}
		if !g.advanceInitParts(written) {
			return nil, fmt.Errorf("grammar: the written text %q does not start a tool call in this syntax", o.Written)
		}
	}
	return g, nil
}

// rawName reports whether a tool name can be written raw between markers:
// nothing in it can end the name early or read as a marker.
func rawName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == '_' || b == '-' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z') {
			return false
		}
	}
	return true
}

// freeMarked is the free text before a lazy call of a syntax with token
// markers: any plain text that spells none of the markers nor guard (an
// Aho–Corasick automaton over them whose matches are dead ends), and the
// marker tokens themselves, each restarting the text; it may end at any
// point. The trigger's first token leads to then (the rest of the
// trigger, then the calls); when the trigger has more after that token
// (harmony's "commentary to=functions.") the token may also continue the
// free text, which then must not write guard.
func (c *schemaCompiler) freeMarked(mk markers, guard string, trigger int32, more bool, then int32) frag {
	n := c.n
	patterns := append([]string{}, mk.texts...)
	if guard != "" {
		patterns = append(patterns, guard)
	}
	ac := newAhoCorasick(patterns)
	state := make([]int32, len(ac.next))
	for i := range state {
		state[i] = -1
		if !ac.match[i] {
			state[i] = n.add()
		}
	}
	out := n.add()
	root := state[0]
	for i, row := range ac.next {
		from := state[i]
		if from < 0 {
			continue
		}
		for lo := 0; lo < 256; {
			to := state[row[lo]]
			hi := lo
			for hi+1 < 256 && state[row[hi+1]] == to {
				hi++
			}
			if to >= 0 {
				n.edge(from, byte(lo), byte(hi), to)
			}
			lo = hi + 1
		}
		n.eps(from, out)
		for k, id := range mk.ids {
			if !mk.found[k] || mk.eos[k] {
				continue // an EOS marker ends the text, which the engine allows where it may end
			}
			if id == trigger {
				n.tokenEdge(from, id, then)
				if !more {
					continue
				}
			}
			n.tokenEdge(from, id, root)
		}
	}
	return frag{root, out}
}

// ahoCorasick is the string-matching automaton of several patterns: node
// i is a prefix of some pattern, next[i][b] the node after byte b, and
// match marks the nodes at which some pattern has just been read in full.
type ahoCorasick struct {
	next  [][256]int32
	match []bool
}

func newAhoCorasick(patterns []string) *ahoCorasick {
	// The trie, with -1 for a missing child.
	ac := &ahoCorasick{}
	add := func() int32 {
		var row [256]int32
		for b := range row {
			row[b] = -1
		}
		ac.next = append(ac.next, row)
		ac.match = append(ac.match, false)
		return int32(len(ac.next) - 1)
	}
	add()
	for _, p := range patterns {
		cur := int32(0)
		for i := 0; i < len(p); i++ {
			if ac.next[cur][p[i]] < 0 {
				nx := add()
				ac.next[cur][p[i]] = nx
			}
			cur = ac.next[cur][p[i]]
		}
		ac.match[cur] = true
	}
	// Breadth first, each node's missing children become the moves of its
	// failure node (the longest proper suffix that is a prefix), already
	// complete; a node whose failure node matches matches too.
	fail := make([]int32, len(ac.next))
	var queue []int32
	for b := range 256 {
		if v := ac.next[0][b]; v < 0 {
			ac.next[0][b] = 0
		} else {
			queue = append(queue, v)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		ac.match[u] = ac.match[u] || ac.match[fail[u]]
		for b := range 256 {
			if v := ac.next[u][b]; v < 0 {
				ac.next[u][b] = ac.next[fail[u]][b]
			} else {
				fail[v] = ac.next[fail[u]][b]
				queue = append(queue, v)
			}
		}
	}
	return ac
}

// advanceInitParts moves the grammar's start past text and marker
// tokens; false if the grammar does not allow them.
func (g *Grammar) advanceInitParts(ps []part) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.init
	for _, p := range ps {
		if p.tok {
			if s = g.d.tokenStep(s, p.id); s < 0 {
				return false
			}
			continue
		}
		for i := 0; i < len(p.text); i++ {
			if s = g.d.step(s, p.text[i]); s < 0 {
				return false
			}
		}
	}
	g.init = s
	return true
}
