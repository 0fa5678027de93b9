package templates

import (
	"fmt"
	"strings"
)

// Bounds on the template source itself, checked before the engine's
// recursive-descent parser sees it, so a hostile template cannot make the
// parser recurse without end.
const (
	maxTemplateBytes = 1 << 20
	maxNesting       = 200
)

// checkSource refuses a template that is too large or nests blocks or
// brackets too deeply.
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
