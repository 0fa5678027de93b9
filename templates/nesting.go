package templates

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on the template source itself, checked before the engine's
// recursive-descent parser sees it, so a hostile template cannot make the
// parser recurse without end.
const (
	maxTemplateBytes = 1 << 20
	maxNesting       = 200
)

// checkSource refuses a template that is too large, nests blocks or
// brackets too deeply, or has text the parser would misread (see
// misreadNumber).
func checkSource(src string) error {
	if len(src) > maxTemplateBytes {
		return fmt.Errorf("template of %d bytes exceeds %d", len(src), maxTemplateBytes)
	}
	blocks := 0
	var err error
	eachTag(src, func(kind byte, body string) bool {
		if kind == '#' {
			return true
		}
		toks := lexTag(body)
		if misreadNumber(body, toks) {
			err = errors.New(`a number followed by "." and a non-ASCII character, which the template parser misreads`)
			return false
		}
		depth := 0
		for _, t := range toks {
			if t.kind != 'p' {
				continue
			}
			switch t.text {
			case "(", "[", "{":
				depth++
				if depth > maxNesting {
					err = fmt.Errorf("brackets nested deeper than %d", maxNesting)
					return false
				}
			case ")", "]", "}":
				depth--
			}
		}
		if kind != '%' || len(toks) == 0 {
			return true
		}
		switch word := toks[0].text; {
		case strings.HasPrefix(word, "end"):
			blocks--
		case word == "if" || word == "for" || word == "macro" || word == "call" || word == "filter" || word == "with" || word == "block":
			blocks++
		case word == "set" && !strings.Contains(body, "="):
			blocks++
		}
		if blocks > maxNesting {
			err = fmt.Errorf("blocks nested deeper than %d", maxNesting)
			return false
		}
		return true
	})
	return err
}

// misreadNumber reports whether a tag's body, lexed as toks, has a "."
// right after a digit and right before a non-ASCII character, outside its
// string literals. gonja's lexer, reading a number there, steps back from
// that character by the character's width instead of by the "."'s, and so
// loses its place: it reads the number as a name, fails, or (after a
// character it skips, such as an invalid UTF-8 byte) emits the same empty
// token for ever. In Jinja such text is an attribute of a number, which no
// template means.
func misreadNumber(body string, toks []token) bool {
	for _, t := range toks {
		if t.text != "." || t.kind != 'o' || t.end >= len(body) || body[t.end] < utf8.RuneSelf {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(body[:t.start]); unicode.IsDigit(r) {
			return true
		}
	}
	return false
}
