package grammar

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/prism-local/prism/internal/jsonorder"
)

// Listed values beside keywords the value-by-value checks do not cover
// (properties, items, additionalProperties … beside enum or const): the
// other keywords are compiled on their own, into a grammar of their own,
// and each listed value is kept when that grammar accepts its spelling,
// the one the enum writes. Whatever the grammar enforces exactly is then
// decided exactly for each value; a value it refuses only for its
// spelling (1.0 where an integer is asked) is dropped, never one kept
// that the keywords reject.

// maxListedDepth bounds listed values checked inside the keywords of
// another such check (a schema whose enum is beside a $ref to itself).
const maxListedDepth = 4

// listedFilter returns a check of listed values against the keywords of v
// other than enum, const and type, or nil when there are none to check
// this way.
func (c *schemaCompiler) listedFilter(v *jsonorder.Value, path, kw string) func(*jsonorder.Value) bool {
	var others []jsonorder.Member
	for _, m := range v.Members {
		if vocabulary[m.Name] && m.Name != "enum" && m.Name != "const" && m.Name != "type" {
			others = append(others, m)
		}
	}
	complex := false
	for _, m := range others {
		complex = complex || !literalKeywords[m.Name]
	}
	if !complex {
		return nil
	}
	if c.listedDepth >= maxListedDepth {
		c.unsupported(path, others[0].Name, "cannot be combined with %s this deep", kw)
		return nil
	}
	sc := c.fork()
	entry := sc.sub(&jsonorder.Value{Kind: jsonorder.Object, Members: others}, path)
	c.warnings = append(c.warnings, sc.warnings...)
	if sc.err != nil {
		if c.err == nil {
			c.err = sc.err
		}
		return nil
	}
	if !sc.n.trim(entry) {
		return func(*jsonorder.Value) bool { return false }
	}
	d := newDFA(sc.n)
	start := d.start(entry)
	return func(e *jsonorder.Value) bool {
		s := start
		for _, b := range spell(nil, e) {
			if s = d.step(s, b); s < 0 {
				return false
			}
		}
		return d.accept[s]
	}
}

// fork is a compiler of the same document and options with a network of
// its own.
func (c *schemaCompiler) fork() *schemaCompiler {
	sc := newSchemaCompiler(c.root, Options{Strict: c.strict})
	sc.param, sc.refAlone, sc.proofOnly = c.param, c.refAlone, c.proofOnly
	sc.listedDepth = c.listedDepth + 1
	return sc
}

// spell appends the compact spelling of e that literal matches: numbers
// as written, strings with the escapes jsonChar takes (the short ones,
// \u00XX for the other control characters), members in their order.
func spell(b []byte, e *jsonorder.Value) []byte {
	switch e.Kind {
	case jsonorder.Null:
		return append(b, "null"...)
	case jsonorder.Bool:
		return strconv.AppendBool(b, e.Bool)
	case jsonorder.Number:
		return append(b, e.Number...)
	case jsonorder.String:
		return spellString(b, e.Str)
	case jsonorder.Array:
		b = append(b, '[')
		for i, it := range e.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = spell(b, it)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, m := range e.Members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(spellString(b, m.Name), ':')
			b = spell(b, m.Value)
		}
		return append(b, '}')
	}
}

func spellString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch r {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			if r < 0x20 {
				b = fmt.Appendf(b, `\u%04x`, r)
			} else {
				b = utf8.AppendRune(b, r)
			}
		}
	}
	return append(b, '"')
}
