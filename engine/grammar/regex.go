package grammar

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// JSON Schema patterns are ECMA-262 regular expressions that match
// anywhere in the string unless anchored. They are rewritten into Go's
// syntax where the two agree, parsed with regexp/syntax and built into the
// automaton over the string's JSON spelling. Refused (with the reason):
// lookahead and lookbehind, backreferences, word boundaries, anchors
// anywhere but at the ends, \c control escapes, and \S, \W, \D inside a
// character class. "." is ECMA's (no \n, \r, U+2028, U+2029); \s and \S
// are read so that they hold under both ECMA's and RE2's definitions.

// ecmaSpace is ECMA-262's \s, goSpace RE2's. \s is taken as the smaller
// (RE2's) and \S as the complement of the larger (ECMA's), so a value
// generated for either reading matches under both.
const goSpace = `\t\n\f\r `
const ecmaSpace = `\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`

var lineTerminators = runeSet{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}

// translate rewrites an ECMA-262 pattern into Go's syntax.
func translate(p string) (string, error) {
	var b strings.Builder
	inClass := false
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\':
			if i+1 >= len(rs) {
				return "", errors.New("pattern ends with a backslash")
			}
			i++
			e := rs[i]
			switch {
			case e == 's' && !inClass:
				b.WriteString("[" + goSpace + "]")
			case e == 'S' && !inClass:
				b.WriteString("[^" + ecmaSpace + "]")
			case e == 's':
				b.WriteString(goSpace)
			case (e == 'S' || e == 'W' || e == 'D') && inClass:
				return "", fmt.Errorf(`\%c inside a character class is not supported`, e)
			case e == 'b' && inClass:
				b.WriteString(`\x08`)
			case e == 'b' || e == 'B':
				return "", fmt.Errorf(`word boundaries (\%c) are not supported`, e)
			case e >= '1' && e <= '9':
				return "", errors.New("backreferences are not supported")
			case e == 'c':
				return "", errors.New(`control escapes (\c) are not supported`)
			case e == 'u':
				if i+4 >= len(rs) || strings.Trim(string(rs[i+1:i+5]), "0123456789abcdefABCDEF") != "" {
					return "", errors.New(`malformed \u escape`)
				}
				b.WriteString(`\x{` + string(rs[i+1:i+5]) + `}`)
				i += 4
			case e == '/' || e == '-' && !inClass:
				b.WriteRune(e)
			case e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 'p' || e == 'P' ||
				e == 'n' || e == 'r' || e == 't' || e == 'f' || e == 'v' || e == 'x' || e == '0':
				if e == 'v' {
					b.WriteString(`\x{0B}`)
				} else if e == '0' {
					b.WriteString(`\x00`)
				} else {
					b.WriteRune('\\')
					b.WriteRune(e)
				}
			case e < 0x80 && !unicode.IsLetter(e) && !unicode.IsDigit(e):
				b.WriteRune('\\')
				b.WriteRune(e)
			default:
				return "", fmt.Errorf(`escape \%c is not supported`, e)
			}
		case inClass:
			if r == ']' {
				inClass = false
			}
			if r == '[' {
				b.WriteString(`\[`)
				continue
			}
			b.WriteRune(r)
		case r == '[':
			inClass = true
			b.WriteRune(r)
			if i+1 < len(rs) && rs[i+1] == '^' {
				b.WriteRune('^')
				i++
			}
			if i+1 < len(rs) && rs[i+1] == ']' {
				// ECMA [] matches nothing and [^] anything; Go reads ] as a literal.
				return "", errors.New("empty character classes are not supported")
			}
		case r == '.':
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		case r == '(' && i+2 < len(rs) && rs[i+1] == '?' && (rs[i+2] == '=' || rs[i+2] == '!'):
			return "", errors.New("lookahead is not supported")
		case r == '(' && i+3 < len(rs) && rs[i+1] == '?' && rs[i+2] == '<' && (rs[i+3] == '=' || rs[i+3] == '!'):
			return "", errors.New("lookbehind is not supported")
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

// pattern builds the character automaton of the body of a JSON string
// matching p (an ECMA-262 pattern; anchored: matched as a whole).
func (c *schemaCompiler) pattern(p string, anchored bool) (*cnfa, frag, error) {
	g, err := translate(p)
	if err != nil {
		return nil, frag{}, err
	}
	re, err := syntax.Parse(g, syntax.Perl)
	if err != nil {
		return nil, frag{}, fmt.Errorf("pattern %q: %w", p, err)
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	alts := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		alts = re.Sub
	}
	a := &cnfa{}
	var out []frag
	for _, x := range alts {
		for x.Op == syntax.OpCapture {
			x = x.Sub[0]
		}
		subs := []*syntax.Regexp{x}
		if x.Op == syntax.OpConcat {
			subs = x.Sub
		}
		begin, end := anchored, anchored
		if len(subs) > 0 && subs[0].Op == syntax.OpBeginText {
			begin, subs = true, subs[1:]
		}
		if len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText {
			end, subs = true, subs[:len(subs)-1]
		}
		var parts []frag
		if !begin {
			parts = append(parts, anyChars(a))
		}
		for _, s := range subs {
			f, err := c.rx(a, s)
			if err != nil {
				return nil, frag{}, err
			}
			parts = append(parts, f)
		}
		if !end {
			parts = append(parts, anyChars(a))
		}
		out = append(out, seqOf(a, parts))
	}
	f := altOf(a, out)
	return a.freeze(), f, nil
}

// anyChars matches any characters, any number of them: one state that
// loops on every character (the byte automaton marks it, see plainTo).
func anyChars(a *cnfa) frag {
	s := a.add()
	a.char(s, allRunes, s)
	return frag{s, s}
}

func (c *schemaCompiler) rx(a *cnfa, re *syntax.Regexp) (frag, error) {
	if a.weight+len(c.n.st) > maxStates {
		return frag{}, errors.New("pattern too large")
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return frag{a.add(), a.add()}, nil
	case syntax.OpEmptyMatch:
		return emptyOf(a), nil
	case syntax.OpLiteral:
		var parts []frag
		for _, r := range re.Rune {
			set := runeSet{{r, r}}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					set = append(set, [2]rune{f, f})
				}
			}
			parts = append(parts, a.leaf(set.normalize()))
		}
		return seqOf(a, parts), nil
	case syntax.OpCharClass:
		var set runeSet
		for i := 0; i+1 < len(re.Rune); i += 2 {
			set = append(set, [2]rune{re.Rune[i], re.Rune[i+1]})
		}
		return a.leaf(set.normalize()), nil
	case syntax.OpAnyChar:
		return a.leaf(allRunes), nil
	case syntax.OpAnyCharNotNL:
		return a.leaf(allRunes.minus(lineTerminators)), nil
	case syntax.OpCapture:
		return c.rx(a, re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		f, err := c.rx(a, re.Sub[0])
		if err != nil {
			return frag{}, err
		}
		switch re.Op {
		case syntax.OpStar:
			return starOf(a, f), nil
		case syntax.OpQuest:
			return optOf(a, f), nil
		}
		g, err := c.rx(a, re.Sub[0])
		if err != nil {
			return frag{}, err
		}
		return seqOf(a, []frag{f, starOf(a, g)}), nil
	case syntax.OpRepeat:
		if re.Min > maxCount || re.Max > maxCount {
			return frag{}, fmt.Errorf("repetition counts above %d are not supported", maxCount)
		}
		var err error
		f := repeatOf(a, re.Min, re.Max, func() frag {
			f, e := c.rx(a, re.Sub[0])
			if e != nil {
				err = e
			}
			return f
		})
		return f, err
	case syntax.OpConcat, syntax.OpAlternate:
		var fs []frag
		for _, s := range re.Sub {
			f, err := c.rx(a, s)
			if err != nil {
				return frag{}, err
			}
			fs = append(fs, f)
		}
		if re.Op == syntax.OpConcat {
			return seqOf(a, fs), nil
		}
		return altOf(a, fs), nil
	case syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine:
		return frag{}, errors.New("anchors (^, $) are supported only at the start and end of the pattern")
	default:
		return frag{}, fmt.Errorf("regular expression operator %v is not supported", re.Op)
	}
}
