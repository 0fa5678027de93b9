package templates

import (
	"regexp"
	"sort"
	"strings"
)

// The parser sees the source after the whitespace rules and the
// conditional hoisting have rewritten it, so its positions are positions
// in the rewritten text. An error must name the line of the template as
// the model ships it; each rewrite therefore records which stretches of
// its output are copies of its input, and an offset is mapped back
// through every rewrite in turn.

// span says out[out:out+n] is a copy of in[in:in+n].
type span struct{ out, in, n int }

// srcMap maps offsets in one rewrite's output to offsets in its input.
// The nil map is the identity.
type srcMap []span

// origin maps an output offset to the input. An offset inside inserted
// text maps to the end of the copy before it: where the insertion stands.
func (m srcMap) origin(p int) int {
	if m == nil {
		return p
	}
	i := sort.Search(len(m), func(i int) bool { return m[i].out > p }) - 1
	if i < 0 {
		return 0
	}
	s := m[i]
	if p < s.out+s.n {
		return s.in + p - s.out
	}
	return s.in + s.n
}

// mappedBuilder builds a rewrite of src and its srcMap.
type mappedBuilder struct {
	src string
	sb  strings.Builder
	m   srcMap
}

// copy appends src[from:to].
func (b *mappedBuilder) copy(from, to int) {
	if to <= from {
		return
	}
	if k := len(b.m) - 1; k >= 0 && b.m[k].out+b.m[k].n == b.sb.Len() && b.m[k].in+b.m[k].n == from {
		b.m[k].n += to - from // contiguous with the last copy
	} else {
		b.m = append(b.m, span{out: b.sb.Len(), in: from, n: to - from})
	}
	b.sb.WriteString(b.src[from:to])
}

// insert appends text that is not in src.
func (b *mappedBuilder) insert(s string) { b.sb.WriteString(s) }

func (b *mappedBuilder) result() (string, srcMap) { return b.sb.String(), b.m }

// keepGroups replaces every match of re in src by the submatches keep
// selects (by their index and the match's submatch offsets), which is
// how each whitespace rule is written: a rule only ever drops text.
func keepGroups(re *regexp.Regexp, src string, keep func(src string, m []int) []int) (string, srcMap) {
	matches := re.FindAllStringSubmatchIndex(src, -1)
	if matches == nil {
		return src, nil
	}
	b := &mappedBuilder{src: src}
	last := 0
	for _, m := range matches {
		b.copy(last, m[0])
		for _, g := range keep(src, m) {
			b.copy(m[2*g], m[2*g+1])
		}
		last = m[1]
	}
	b.copy(last, len(src))
	return b.result()
}

// rewritten is the source as the parser sees it, with the way back.
type rewritten struct {
	original string
	text     string
	maps     []srcMap // in the order the rewrites ran
}

// line returns the 1-based line of the original source that offset p of
// the rewritten text comes from.
func (r *rewritten) line(p int) int {
	for i := len(r.maps) - 1; i >= 0; i-- {
		p = r.maps[i].origin(p)
	}
	p = min(max(p, 0), len(r.original))
	return strings.Count(r.original[:p], "\n") + 1
}

// offset returns the offset of a 1-based line and column of the
// rewritten text (the parser's syntax errors give only those).
func (r *rewritten) offset(line, col int) int {
	p := 0
	for i := 1; i < line; i++ {
		j := strings.IndexByte(r.text[p:], '\n')
		if j < 0 {
			return len(r.text)
		}
		p += j + 1
	}
	return min(p+max(col-1, 0), len(r.text))
}
