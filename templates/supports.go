package templates

import "strings"

// SupportsTools reports whether a chat template renders tool definitions
// (P14): the name tools must appear inside a Jinja expression ({{ ... }})
// or statement ({% ... %}) as a variable — not in a comment, not in the
// template's literal text, not inside a quoted string, not as part of a
// longer name (tool_registry, tools_dict) or as an attribute (x.tools).
func SupportsTools(source string) bool {
	found := false
	eachTag(source, func(kind byte, body string) bool {
		if kind == '#' {
			return true
		}
		toks := lexTag(body)
		for i, t := range toks {
			if t.kind == 'n' && t.text == "tools" && (i == 0 || toks[i-1].text != ".") {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// eachTag calls fn with the kind ('{', '%' or '#') and body of every tag in
// src, in order, skipping {% raw %} blocks, until fn returns false. An
// expression or statement left open ends the source: its body is the rest.
func eachTag(src string, fn func(kind byte, body string) bool) {
	for i := 0; i < len(src); {
		open := strings.IndexByte(src[i:], '{')
		if open < 0 || i+open+1 >= len(src) {
			return
		}
		open += i
		kind := src[open+1]
		closer := ""
		switch kind {
		case '{':
			closer = "}}"
		case '%':
			closer = "%}"
		case '#':
			closer = "#}"
		default:
			i = open + 1
			continue
		}
		var end int
		if kind == '#' {
			e := strings.Index(src[open+2:], "#}")
			if e < 0 {
				return
			}
			end = open + 2 + e + 2
		} else if end = tagEnd(src, open+2, closer); end < 0 {
			// The parser reads an unclosed expression or statement on to
			// the end of the source before it fails, so that text is
			// checked as the tag's body too.
			fn(kind, strings.TrimLeft(src[open+2:], "-+"))
			return
		}
		body := strings.Trim(src[open+2:end-2], "-+")
		if kind == '%' && strings.TrimSpace(body) == "raw" {
			stop := strings.Index(src[end:], "endraw")
			if stop < 0 {
				return
			}
			i = end + stop + len("endraw")
			continue
		}
		if !fn(kind, body) {
			return
		}
		i = end
	}
}
