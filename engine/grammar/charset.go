package grammar

import (
	"slices"
	"unicode/utf8"
)

// runeSet is a set of code points as sorted, disjoint, inclusive ranges.
type runeSet [][2]rune

// allRunes is every Unicode scalar value (surrogates are left out when the
// set is encoded).
var allRunes = runeSet{{0, utf8.MaxRune}}

// normalize sorts and merges the ranges.
func (s runeSet) normalize() runeSet {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	out := s[:0]
	for _, r := range s {
		if r[0] > r[1] {
			continue
		}
		if len(out) > 0 && r[0] <= out[len(out)-1][1]+1 {
			out[len(out)-1][1] = max(out[len(out)-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// minus removes the ranges of t from s (both normalised).
func (s runeSet) minus(t runeSet) runeSet {
	var out runeSet
	for _, r := range s {
		lo, hi := r[0], r[1]
		for _, x := range t {
			if x[1] < lo || x[0] > hi {
				continue
			}
			if x[0] > lo {
				out = append(out, [2]rune{lo, x[0] - 1})
			}
			lo = x[1] + 1
			if lo > hi {
				break
			}
		}
		if lo <= hi {
			out = append(out, [2]rune{lo, hi})
		}
	}
	return out
}

// and returns the code points in both s and t (both normalised).
func (s runeSet) and(t runeSet) runeSet {
	var out runeSet
	for i, j := 0, 0; i < len(s) && j < len(t); {
		lo, hi := max(s[i][0], t[j][0]), min(s[i][1], t[j][1])
		if lo <= hi {
			out = append(out, [2]rune{lo, hi})
		}
		if s[i][1] < t[j][1] {
			i++
		} else {
			j++
		}
	}
	return out
}

func (s runeSet) has(r rune) bool {
	for _, x := range s {
		if r >= x[0] && r <= x[1] {
			return true
		}
	}
	return false
}

// utf8Seqs splits [lo, hi] into runs whose UTF-8 encodings are products of
// byte ranges, calling emit with each run's ranges (one per encoded byte).
// Surrogates, which have no UTF-8 encoding, are skipped.
func utf8Seqs(lo, hi rune, emit func(seq [][2]byte)) {
	if lo > hi {
		return
	}
	if lo <= 0xDFFF && hi >= 0xD800 {
		utf8Seqs(lo, min(hi, 0xD7FF), emit)
		utf8Seqs(max(lo, 0xE000), hi, emit)
		return
	}
	for _, b := range [...]rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= b && hi > b {
			utf8Seqs(lo, b, emit)
			utf8Seqs(b+1, hi, emit)
			return
		}
	}
	if hi <= 0x7F {
		emit([][2]byte{{byte(lo), byte(hi)}})
		return
	}
	for i := 1; i < 4; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Seqs(lo, lo|m, emit)
				utf8Seqs((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Seqs(lo, (hi&^m)-1, emit)
				utf8Seqs(hi&^m, hi, emit)
				return
			}
		}
	}
	var a, b [4]byte
	n := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([][2]byte, n)
	for i := range n {
		seq[i] = [2]byte{a[i], b[i]}
	}
	emit(seq)
}

// runes adds to the automaton edges from in to out for the UTF-8 encoding
// of every rune of s.
func (n *nfa) runes(in, out int32, s runeSet) {
	for _, r := range s {
		utf8Seqs(r[0], r[1], func(seq [][2]byte) {
			cur := in
			for i, br := range seq {
				nx := out
				if i < len(seq)-1 {
					nx = n.add()
				}
				n.edge(cur, br[0], br[1], nx)
				cur = nx
			}
		})
	}
}

// jsonSpecial are the characters a JSON string cannot hold unescaped.
var jsonSpecial = runeSet{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}

var shortEscapes = [...]struct {
	r   rune
	esc string
}{{'"', `\"`}, {'\\', `\\`}, {'\n', `\n`}, {'\r', `\r`}, {'\t', `\t`}, {'\b', `\b`}, {'\f', `\f`}, {'/', `\/`}}

func shortEscape(r rune) bool {
	for _, e := range shortEscapes {
		if e.r == r {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdef"

// jsonChar adds edges from in to out that spell, inside a JSON string, one
// character of s: raw UTF-8 where JSON allows it, the short escapes, and
// \u00xx (either case) for other control characters. Other \uXXXX escapes
// are not generated: they spell nothing the raw form cannot.
func (n *nfa) jsonChar(in, out int32, s runeSet) {
	if len(s) == 1 && s[0] == allRunes[0] && len(n.st[in].bytes) == 0 {
		n.st[in].plainTo = out + 1
	}
	n.runes(in, out, s.minus(jsonSpecial))
	// The escapes share their backslash and \u00 prefix, so a position in
	// a string is one automaton state rather than one per escape (the DFA
	// states inside strings stay small).
	esc, u00 := int32(-1), int32(-1) // after the backslash, after \u00
	hex := [2]int32{-1, -1}          // after \u000 and \u001
	escape := func() int32 {
		if esc < 0 {
			esc = n.add()
			n.edge(in, '\\', '\\', esc)
		}
		return esc
	}
	for _, e := range shortEscapes {
		if s.has(e.r) {
			n.edge(escape(), e.esc[1], e.esc[1], out)
		}
	}
	for r := rune(0); r < 0x20; r++ {
		if !s.has(r) || shortEscape(r) {
			continue
		}
		if u00 < 0 {
			u, z := n.add(), n.add()
			u00 = n.add()
			n.edge(escape(), 'u', 'u', u)
			n.edge(u, '0', '0', z)
			n.edge(z, '0', '0', u00)
		}
		hi := r >> 4
		if hex[hi] < 0 {
			hex[hi] = n.add()
			n.edge(u00, hexDigits[hi], hexDigits[hi], hex[hi])
		}
		d := hexDigits[r&15]
		n.edge(hex[hi], d, d, out)
		if d >= 'a' {
			n.edge(hex[hi], d-'a'+'A', d-'a'+'A', out)
		}
	}
}

// jsonCharFrag is jsonChar as a fragment.
func (n *nfa) jsonCharFrag(s runeSet) frag {
	in, out := n.add(), n.add()
	n.jsonChar(in, out, s)
	return frag{in, out}
}

// jsonStringLit matches s as a JSON string literal, quotes included, in
// the canonical spelling.
func (n *nfa) jsonStringLit(s string) frag {
	parts := []frag{}
	run := []byte{'"'}
	for _, r := range s {
		// A character with no escape form (not a control character, a
		// quote, a backslash or a slash) is its UTF-8 bytes alone: runs
		// of them are one literal, which is what jsonChar would build,
		// at a fraction of the cost (object keys are mostly such runs).
		if r >= 0x20 && r != '"' && r != '\\' && r != '/' && utf8.ValidRune(r) {
			run = utf8.AppendRune(run, r)
			continue
		}
		if len(run) > 0 {
			parts, run = append(parts, n.lit(string(run))), run[:0]
		}
		parts = append(parts, n.jsonCharFrag(runeSet{{r, r}}))
	}
	parts = append(parts, n.lit(string(append(run, '"'))))
	return n.seq(parts...)
}
