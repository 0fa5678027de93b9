package tokenizer

import (
	"encoding/json"
	"strings"
)

// preStep splits (or rewrites) pieces of text; sectionIndex is the index of
// the section being encoded (for Metaspace's prepend_scheme "first").
type preStep interface {
	apply(in []string, out []string, sectionIndex int) []string
}

// preTokenizer is the pre-tokenization pipeline. byteLevel reports that the
// pieces go to the model as bytes (a ByteLevel pre-tokenizer ends it).
type preTokenizer struct {
	steps     []preStep
	byteLevel bool
}

func (p *preTokenizer) run(text string, sectionIndex int, a, b []string) (pieces, spare []string) {
	a = append(a[:0], text)
	for _, s := range p.steps {
		b = s.apply(a, b[:0], sectionIndex)
		a, b = b, a
	}
	return a, b
}

type splitBehavior int

const (
	behIsolated splitBehavior = iota
	behRemoved
	behMergedWithPrevious
	behMergedWithNext
	behContiguous
)

// splitStep is the Split pre-tokenizer (and the regex part of ByteLevel).
type splitStep struct {
	match    patternMatcher // regex scanner, or nil for a literal
	literal  string
	behavior splitBehavior
	invert   bool
	onlyHits bool // keep only matches (Digits, WhitespaceSplit)
}

// next finds the first match at or after from: [start, end), or start < 0.
func (sp *splitStep) next(s string, from int) (int, int) {
	if sp.match == nil {
		k := strings.Index(s[from:], sp.literal)
		if k < 0 {
			return -1, -1
		}
		return from + k, from + k + len(sp.literal)
	}
	for i := from; i < len(s); {
		if e := sp.match(s, i); e > i {
			return i, e
		}
		_, n := runeAt(s, i)
		i += n
	}
	return -1, -1
}

func (sp *splitStep) apply(in []string, out []string, _ int) []string {
	for _, s := range in {
		out = sp.split(s, out)
	}
	return out
}

func (sp *splitStep) split(s string, out []string) []string {
	if sp.behavior == behIsolated && !sp.invert || sp.onlyHits {
		prev := 0
		for prev < len(s) {
			st, e := sp.next(s, prev)
			if st < 0 {
				break
			}
			if st > prev && !sp.onlyHits {
				out = append(out, s[prev:st])
			}
			out = append(out, s[st:e])
			prev = e
		}
		if prev < len(s) && !sp.onlyHits {
			out = append(out, s[prev:])
		}
		return out
	}
	// General behaviours: collect (range, is delimiter) segments first.
	type seg struct {
		a, b  int
		delim bool
	}
	var segs []seg
	prev := 0
	for prev < len(s) {
		st, e := sp.next(s, prev)
		if st < 0 {
			break
		}
		if st > prev {
			segs = append(segs, seg{prev, st, sp.invert})
		}
		segs = append(segs, seg{st, e, !sp.invert})
		prev = e
	}
	if prev < len(s) {
		segs = append(segs, seg{prev, len(s), sp.invert})
	}
	var res []seg
	switch sp.behavior {
	case behIsolated:
		res = segs
	case behRemoved:
		for _, g := range segs {
			if !g.delim {
				res = append(res, g)
			}
		}
	case behMergedWithPrevious:
		prevDelim := false
		for _, g := range segs {
			if g.delim && !prevDelim && len(res) > 0 {
				res[len(res)-1].b = g.b
			} else {
				res = append(res, g)
			}
			prevDelim = g.delim
		}
	case behMergedWithNext:
		prevDelim := false
		for k := len(segs) - 1; k >= 0; k-- {
			g := segs[k]
			if g.delim && !prevDelim && len(res) > 0 {
				res[len(res)-1].a = g.a
			} else {
				res = append(res, g)
			}
			prevDelim = g.delim
		}
		for l, r := 0, len(res)-1; l < r; l, r = l+1, r-1 {
			res[l], res[r] = res[r], res[l]
		}
	case behContiguous:
		for k, g := range segs {
			if k > 0 && g.delim && segs[k-1].delim && len(res) > 0 {
				res[len(res)-1].b = g.b
			} else {
				res = append(res, g)
			}
		}
	}
	for _, g := range res {
		if g.b > g.a {
			out = append(out, s[g.a:g.b])
		}
	}
	return out
}

// prefixSpaceStep is ByteLevel's add_prefix_space.
type prefixSpaceStep struct{}

func (prefixSpaceStep) apply(in []string, out []string, _ int) []string {
	for _, s := range in {
		if !strings.HasPrefix(s, " ") {
			s = " " + s
		}
		out = append(out, s)
	}
	return out
}

// metaspaceStep replaces spaces and prepends the replacement character; like
// the reference it does not split.
type metaspaceStep struct {
	replacement string
	scheme      string // always, first, never
}

func (m metaspaceStep) apply(in []string, out []string, sectionIndex int) []string {
	for _, s := range in {
		s = strings.ReplaceAll(s, " ", m.replacement)
		if !strings.HasPrefix(s, m.replacement) && (m.scheme == "always" || m.scheme == "first" && sectionIndex == 0) {
			s = m.replacement + s
		}
		out = append(out, s)
	}
	return out
}

func matchASCIIDigits(individual bool) patternMatcher {
	return func(s string, i int) int {
		isD := s[i] >= '0' && s[i] <= '9'
		if isD && individual {
			return i + 1
		}
		j := i
		for j < len(s) && (s[j] >= '0' && s[j] <= '9') == isD {
			if isD {
				j++
			} else {
				_, n := runeAt(s, j)
				j += n
			}
		}
		return j
	}
}

func matchNonJSSpace(s string, i int) int {
	j := i
	for j < len(s) {
		r, n := runeAt(s, j)
		if classOf(r)&cJSWS != 0 {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}

func buildPreTokenizer(raw json.RawMessage) (*preTokenizer, error) {
	p := &preTokenizer{}
	if isNull(raw) {
		return p, nil
	}
	if err := p.add(raw); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *preTokenizer) add(raw json.RawMessage) error {
	var head componentJSON
	if err := json.Unmarshal(raw, &head); err != nil {
		return badComponent("pre_tokenizer", "%w", err)
	}
	comp := "pre_tokenizer." + head.Type
	if p.byteLevel {
		return unsupported(comp, "a pre-tokenizer after ByteLevel")
	}
	switch head.Type {
	case "Sequence":
		var c struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return badComponent(comp, "%w", err)
		}
		for _, r := range c.Pretokenizers {
			if isNull(r) {
				continue
			}
			if err := p.add(r); err != nil {
				return err
			}
		}
		return nil
	case "Split":
		var c struct {
			Pattern  json.RawMessage `json:"pattern"`
			Behavior string          `json:"behavior"`
			Invert   bool            `json:"invert"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return badComponent(comp, "%w", err)
		}
		var pat struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		}
		if err := json.Unmarshal(c.Pattern, &pat); err != nil {
			return badComponent(comp, "pattern: %w", err)
		}
		st := &splitStep{invert: c.Invert}
		switch {
		case pat.Regex != nil:
			st.match = knownPattern(*pat.Regex)
			if st.match == nil {
				return unsupported(comp, "regex "+*pat.Regex)
			}
		case pat.String != nil && *pat.String != "":
			st.literal = *pat.String
		default:
			return badComponent(comp, "empty pattern")
		}
		switch c.Behavior {
		case "Isolated", "":
			st.behavior = behIsolated
		case "Removed":
			st.behavior = behRemoved
		case "MergedWithPrevious":
			st.behavior = behMergedWithPrevious
		case "MergedWithNext":
			st.behavior = behMergedWithNext
		case "Contiguous":
			st.behavior = behContiguous
		default:
			return unsupported(comp, "behavior "+c.Behavior)
		}
		p.steps = append(p.steps, st)
		return nil
	case "ByteLevel":
		var c struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return badComponent(comp, "%w", err)
		}
		if c.AddPrefixSpace {
			p.steps = append(p.steps, prefixSpaceStep{})
		}
		if c.UseRegex == nil || *c.UseRegex {
			p.steps = append(p.steps, &splitStep{match: matchGPT2, onlyHits: true})
		}
		p.byteLevel = true
		return nil
	case "Metaspace":
		var c struct {
			Replacement    *string `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return badComponent(comp, "%w", err)
		}
		m := metaspaceStep{replacement: metaSpace, scheme: "always"}
		if c.Replacement != nil {
			m.replacement = *c.Replacement
		}
		if c.PrependScheme != nil {
			m.scheme = *c.PrependScheme
		}
		p.steps = append(p.steps, m)
		return nil
	case "Digits":
		var c struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return badComponent(comp, "%w", err)
		}
		p.steps = append(p.steps, &splitStep{match: matchASCIIDigits(c.Individual), onlyHits: true})
		return nil
	case "WhitespaceSplit":
		p.steps = append(p.steps, &splitStep{match: matchNonJSSpace, onlyHits: true})
		return nil
	}
	return unsupported(comp, "")
}
