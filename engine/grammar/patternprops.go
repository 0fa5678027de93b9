package grammar

import (
	"fmt"

	"github.com/prism-local/prism/internal/jsonorder"
)

// patternProperties: a member whose name matches a pattern (searched
// for, as ECMA-262 does, unless anchored) must match that pattern's
// schema, every matching pattern's; additionalProperties applies only to
// names neither listed nor matched. Listed names take the schemas of the
// patterns they match besides their own; the other names are split into
// classes by the set of patterns they match, each class a key automaton
// (the intersection of those patterns, the complements of the others,
// and the complement of the listed names) with the conjunction of its
// patterns' schemas, or additionalProperties for the class of no pattern.

// maxPatternClasses bounds the patterns whose combinations are told
// apart (2^n classes); past it patternProperties is refused.
const maxPatternProperties = 6

type patternProp struct {
	a      *cnfa
	f      frag
	schema *jsonorder.Value
	path   string
}

type patternProps []patternProp

// patternProps compiles v's patternProperties.
func (c *schemaCompiler) patternProps(v *jsonorder.Value, path string) patternProps {
	pp := v.Get("patternProperties")
	if pp == nil {
		return nil
	}
	if pp.Kind != jsonorder.Object {
		c.fail(path+"/patternProperties", "patternProperties", "must be an object")
		return nil
	}
	var out patternProps
	for _, m := range pp.Members {
		p := path + "/patternProperties/" + escapePointer(m.Name)
		a, f, err := c.pattern(m.Name, false)
		if err != nil {
			c.unsupported(p, "patternProperties", "%v", err)
			continue
		}
		out = append(out, patternProp{a: a, f: f, schema: m.Value, path: p})
	}
	return out
}

// matching returns the schemas of the patterns name matches.
func (ps patternProps) matching(name string) []*jsonorder.Value {
	var out []*jsonorder.Value
	for _, p := range ps {
		if p.a.matches(p.f, name) {
			out = append(out, p.schema)
		}
	}
	return out
}

// extraClass is one kind of member beyond the listed ones: its key (a
// sub-network matching the quoted name) and the schema of its value (nil:
// any value).
type extraClass struct {
	key   int32
	value *jsonorder.Value
	path  string
}

// extraClasses returns the kinds of extra members an object allows
// beside the listed names.
func (c *schemaCompiler) extraClasses(names []string, pats patternProps, addl *jsonorder.Value, path string) []extraClass {
	addlPath := path + "/additionalProperties"
	addlNone := addl != nil && addl.Kind == jsonorder.Bool && !addl.Bool
	if addl != nil && isTrue(addl) {
		addl = nil
	}
	// A pattern whose schema is true only matters when it spares names
	// from additionalProperties.
	if addl == nil && !addlNone {
		var kept patternProps
		for _, p := range pats {
			if !isTrue(p.schema) {
				kept = append(kept, p)
			}
		}
		pats = kept
	}
	if len(pats) == 0 {
		if addlNone {
			return nil
		}
		return []extraClass{{key: c.keySub(c.keyExcept(names)), value: addl, path: addlPath}}
	}
	if len(pats) > maxPatternProperties {
		c.unsupported(path, "patternProperties", "more than %d patterns whose schemas differ", maxPatternProperties)
		return nil
	}
	list := array()
	for _, nm := range names {
		list.Items = append(list.Items, str(nm))
	}
	ea, ef := exceptStrings(list)
	comps := make([]patternProp, len(pats))
	var out []extraClass
	for set := 0; set < 1<<len(pats); set++ {
		if set == 0 && addlNone {
			continue
		}
		a, f := ea, ef
		var schemas []*jsonorder.Value
		for i, p := range pats {
			pa, pf := p.a, p.f
			if set&(1<<i) != 0 {
				schemas = append(schemas, p.schema)
			} else {
				if comps[i].a == nil {
					ca, cf, ok := complement(p.a, p.f)
					if !ok {
						c.unsupported(p.path, "patternProperties", "the names this pattern does not match need an automaton over the size limit")
						return nil
					}
					comps[i] = patternProp{a: ca, f: cf}
				}
				pa, pf = comps[i].a, comps[i].f
			}
			var ok bool
			if a, f, ok = intersect(a, f, pa, pf); !ok {
				c.unsupported(p.path, "patternProperties", "the names these patterns match need an automaton over the size limit (%d)", maxProduct)
				return nil
			}
			if a.empty(f) {
				break
			}
		}
		if a.empty(f) {
			continue
		}
		x := extraClass{key: c.keySub(c.n.seq(c.n.lit(`"`), c.spell(a, f), c.n.lit(`"`))), value: addl, path: addlPath}
		if set != 0 {
			x.value, x.path = allOf(schemas...), fmt.Sprintf("%s/patternProperties", path)
		}
		out = append(out, x)
	}
	return out
}

// keySub makes a sub-network of a key, so that each member count's copy
// of the object calls it instead of copying it.
func (c *schemaCompiler) keySub(f frag) int32 {
	e := c.n.add()
	c.finishSub(e, f)
	return e
}
