package templates

import (
	"fmt"
	"strings"
)

// The engine parses a conditional expression (a if b else c) only as a
// whole output or assignment: {{ a if b else c }} and {% set x = a if b
// else c %}. Inside brackets — '(' a if b else c ')', a call argument, a
// list item — it fails to parse, and real templates (Gemma-3's among them)
// put it there. hoistConditionals rewrites the template source so every
// such conditional becomes an assignment just before the tag that uses
// it:
//
//	{{ 'x' + (p if c else "") }}
//
// becomes
//
//	{% set _prism_cond_1 = p if c else "" %}{{ 'x' + (_prism_cond_1) }}
//
// The rewrite runs after preprocess has applied the whitespace rules, so
// the inserted tag only needs the tag's own '-' (left trim) to render the
// same text.
// The one semantic difference: the hoisted conditional is evaluated even
// where the enclosing expression would have short-circuited past it.
// Tags where hoisting would change meaning (elif, macro and call headers,
// for-loop filters naming the loop variable) are left alone.

// condPrefix names the hoisted values. A template that already uses such
// names is left unrewritten.
const condPrefix = "_prism_cond_"

// hoistConditionals returns the rewritten source, how many conditionals
// it hoisted, and the map back to src.
func hoistConditionals(src string) (string, int, srcMap) {
	if !strings.Contains(src, " if ") || strings.Contains(src, condPrefix) {
		return src, 0, nil
	}
	count := 0
	out := &mappedBuilder{src: src}
	finish := func() (string, int, srcMap) {
		text, m := out.result()
		return text, count, m
	}
	i := 0
	for i < len(src) {
		open := strings.Index(src[i:], "{")
		if open < 0 || i+open+1 >= len(src) {
			break
		}
		open += i
		kind := src[open+1]
		if kind != '{' && kind != '%' && kind != '#' {
			out.copy(i, open+1)
			i = open + 1
			continue
		}
		out.copy(i, open)
		if kind == '#' {
			end := strings.Index(src[open+2:], "#}")
			if end < 0 {
				out.copy(open, len(src))
				return finish()
			}
			end += open + 4
			out.copy(open, end)
			i = end
			continue
		}
		closer := "}}"
		if kind == '%' {
			closer = "%}"
		}
		end := tagEnd(src, open+2, closer)
		if end < 0 {
			out.copy(open, len(src))
			return finish()
		}
		tag := src[open:end]
		if kind == '%' && isRawStart(tag) {
			stop := strings.Index(src[end:], "endraw")
			if stop < 0 {
				out.copy(open, len(src))
				return finish()
			}
			stop = end + stop
			closeAt := strings.Index(src[stop:], "%}")
			if closeAt < 0 {
				out.copy(open, len(src))
				return finish()
			}
			out.copy(open, stop+closeAt+2)
			i = stop + closeAt + 2
			continue
		}
		rewritten, n := hoistInTag(tag, kind, &count)
		if n == 0 {
			out.copy(open, end)
		} else {
			out.insert(rewritten)
		}
		i = end
	}
	out.copy(i, len(src))
	return finish()
}

func isRawStart(tag string) bool {
	body := strings.Trim(tag[2:len(tag)-2], "-+ \t\r\n")
	return body == "raw"
}

// tagEnd finds the end (exclusive) of a tag whose body starts at from,
// skipping string literals.
func tagEnd(src string, from int, closer string) int {
	for j := from; j < len(src); j++ {
		switch c := src[j]; c {
		case '\'', '"':
			k := j + 1
			for k < len(src) && src[k] != c {
				if src[k] == '\\' {
					k++
				}
				k++
			}
			j = k
		default:
			if strings.HasPrefix(src[j:], closer) {
				return j + len(closer)
			}
		}
	}
	return -1
}

// token is one lexical piece of a tag body.
type token struct {
	start, end int
	text       string
	kind       byte // 'n' name, 's' string, 'p' punctuation, 'o' other
}

func lexTag(body string) []token {
	var toks []token
	for j := 0; j < len(body); {
		c := body[j]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j++
		case c == '\'' || c == '"':
			k := j + 1
			for k < len(body) && body[k] != c {
				if body[k] == '\\' {
					k++
				}
				k++
			}
			if k < len(body) {
				k++
			}
			k = min(k, len(body)) // an unclosed tag's body may end inside an escape
			toks = append(toks, token{j, k, body[j:k], 's'})
			j = k
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			k := j
			for k < len(body) && (body[k] == '_' || body[k] >= 'a' && body[k] <= 'z' || body[k] >= 'A' && body[k] <= 'Z' || body[k] >= '0' && body[k] <= '9') {
				k++
			}
			toks = append(toks, token{j, k, body[j:k], 'n'})
			j = k
		case strings.ContainsRune("()[]{},:", rune(c)):
			toks = append(toks, token{j, j + 1, body[j : j+1], 'p'})
			j++
		default:
			toks = append(toks, token{j, j + 1, body[j : j+1], 'o'})
			j++
		}
	}
	return toks
}

// element is one comma-separated item inside a bracket group.
type element struct{ from, to int } // token indexes, to exclusive

// hoistInTag rewrites one tag. It returns the assignments followed by the
// rewritten tag, and how many conditionals it hoisted.
func hoistInTag(tag string, kind byte, count *int) (string, int) {
	head := 2
	marker := ""
	if len(tag) > 2 && (tag[2] == '-' || tag[2] == '+') {
		marker = tag[2:3]
		head = 3
	}
	body := tag[head : len(tag)-2]
	toks := lexTag(body)
	if len(toks) == 0 {
		return tag, 0
	}
	var loopVars []string
	if kind == '%' {
		switch toks[0].text {
		case "set", "if":
		case "for":
			for _, t := range toks[1:] {
				if t.text == "in" {
					break
				}
				if t.kind == 'n' {
					loopVars = append(loopVars, t.text)
				}
			}
		default:
			return tag, 0
		}
	}
	var hoisted []string
	for {
		el, ok := innermostConditional(toks)
		if !ok {
			break
		}
		// A keyword argument (name=value): hoist only the value.
		if el.to-el.from > 2 && toks[el.from].kind == 'n' && toks[el.from+1].text == "=" && toks[el.from+2].text != "=" {
			el.from += 2
		}
		exprText := body[toks[el.from].start:toks[el.to-1].end]
		for _, t := range toks[el.from:el.to] {
			for _, v := range loopVars {
				if t.kind == 'n' && t.text == v {
					return tag, 0
				}
			}
		}
		*count++
		name := fmt.Sprintf("%s%d", condPrefix, *count)
		hoisted = append(hoisted, fmt.Sprintf("set %s = %s", name, exprText))
		body = body[:toks[el.from].start] + name + body[toks[el.to-1].end:]
		toks = lexTag(body)
	}
	if len(hoisted) == 0 {
		return tag, 0
	}
	var sb strings.Builder
	for i, h := range hoisted {
		m := ""
		if i == 0 && marker == "-" {
			m = marker
		}
		sb.WriteString("{%" + m + " " + h + " %}")
	}
	sb.WriteString(tag[:head] + body + tag[len(tag)-2:])
	return sb.String(), len(hoisted)
}

// innermostConditional finds a bracketed element holding a conditional
// (a name token "if" at the element's own level followed by "else") whose
// own sub-brackets hold none.
func innermostConditional(toks []token) (element, bool) {
	type frame struct{ open, elemStart int }
	var stack []frame
	var found element
	ok := false
	hasIf := map[int]bool{} // by stack depth: current element has "if"
	hasElse := map[int]bool{}
	for i, t := range toks {
		if t.kind == 'p' {
			switch t.text {
			case "(", "[", "{":
				stack = append(stack, frame{i, i + 1})
				d := len(stack)
				hasIf[d], hasElse[d] = false, false
				continue
			case ",", ":", ")", "]", "}":
				d := len(stack)
				if d == 0 {
					continue
				}
				if hasIf[d] && hasElse[d] && !ok {
					found, ok = element{stack[d-1].elemStart, i}, true
				}
				hasIf[d], hasElse[d] = false, false
				if t.text == "," || t.text == ":" {
					stack[d-1].elemStart = i + 1
				} else {
					stack = stack[:d-1]
				}
				if ok {
					return found, true
				}
				continue
			}
		}
		if t.kind == 'n' && len(stack) > 0 {
			d := len(stack)
			switch t.text {
			case "if":
				hasIf[d] = true
			case "else":
				if hasIf[d] {
					hasElse[d] = true
				}
			}
		}
	}
	return element{}, false
}
