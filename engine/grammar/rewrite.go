package grammar

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/prism-local/prism/internal/jsonorder"
)

// Keywords that say "if this, then that" — not, if/then/else and the
// dependency keywords — are enforced by rewriting them into allOf and
// anyOf of schemas the compiler already enforces: a schema's negation is
// built keyword by keyword (see negate), and every rewrite is an exact
// equivalence, so what cannot be negated exactly is refused, never
// loosened.

// Bounds on the rewrites: past them the keyword is refused.
const (
	negateDepth   = 8  // nesting of not inside not, through references too
	maxDistribute = 64 // branches of anyOf/oneOf multiplied out when two meet
)

var (
	trueSchema  = &jsonorder.Value{Kind: jsonorder.Bool, Bool: true}
	falseSchema = &jsonorder.Value{Kind: jsonorder.Bool}
)

func object(ms ...jsonorder.Member) *jsonorder.Value {
	return &jsonorder.Value{Kind: jsonorder.Object, Members: ms}
}

func array(vs ...*jsonorder.Value) *jsonorder.Value {
	return &jsonorder.Value{Kind: jsonorder.Array, Items: vs}
}

func str(s string) *jsonorder.Value { return &jsonorder.Value{Kind: jsonorder.String, Str: s} }

func member(name string, v *jsonorder.Value) jsonorder.Member {
	return jsonorder.Member{Name: name, Value: v}
}

// anyOf is the disjunction of vs (false when empty, the one when single).
func anyOf(vs ...*jsonorder.Value) *jsonorder.Value {
	vs = slices.DeleteFunc(vs, func(v *jsonorder.Value) bool { return v.Kind == jsonorder.Bool && !v.Bool })
	switch len(vs) {
	case 0:
		return falseSchema
	case 1:
		return vs[0]
	}
	if slices.ContainsFunc(vs, func(v *jsonorder.Value) bool { return v.Kind == jsonorder.Bool }) {
		return trueSchema
	}
	return object(member("anyOf", array(vs...)))
}

// allOf is the conjunction of vs (true when empty, the one when single).
func allOf(vs ...*jsonorder.Value) *jsonorder.Value {
	vs = slices.DeleteFunc(slices.Clone(vs), func(v *jsonorder.Value) bool { return v.Kind == jsonorder.Bool && v.Bool })
	switch len(vs) {
	case 0:
		return trueSchema
	case 1:
		return vs[0]
	}
	if slices.ContainsFunc(vs, func(v *jsonorder.Value) bool { return v.Kind == jsonorder.Bool }) {
		return falseSchema
	}
	return object(member("allOf", array(vs...)))
}

// conditionals are the keywords rewritten into allOf.
var conditionals = []string{"not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas"}

// rewrite returns v with its conditional keywords replaced by an allOf of
// equivalent schemas; ok is false when v has none. A keyword that cannot
// be rewritten exactly is reported (refused under strict, a warning
// otherwise) and left out.
func (c *schemaCompiler) rewrite(v *jsonorder.Value, path string) (*jsonorder.Value, bool) {
	if !slices.ContainsFunc(conditionals, func(kw string) bool { return v.Get(kw) != nil }) {
		return nil, false
	}
	var rest []jsonorder.Member
	var parts []*jsonorder.Value
	for _, m := range v.Members {
		if !slices.Contains(conditionals, m.Name) {
			rest = append(rest, m)
		}
	}
	if x := v.Get("not"); x != nil {
		if neg, why := c.negate(x, 0); neg != nil {
			parts = append(parts, neg)
		} else {
			c.unsupported(path+"/not", "not", "cannot be enforced: %s", why)
		}
	}
	if cond := v.Get("if"); cond != nil {
		then, els := v.Get("then"), v.Get("else")
		if then == nil {
			then = trueSchema
		}
		if els == nil {
			els = trueSchema
		}
		if !isTrue(then) || !isTrue(els) {
			if neg, why := c.negate(cond, 0); neg != nil {
				parts = append(parts, anyOf(allOf(cond, then), allOf(neg, els)))
			} else {
				c.unsupported(path+"/if", "if", "the condition's negation cannot be enforced: %s", why)
			}
		}
	}
	for _, kw := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
		d := v.Get(kw)
		if d == nil {
			continue
		}
		if d.Kind != jsonorder.Object {
			c.fail(path+"/"+kw, kw, "must be an object")
			return nil, false
		}
		for _, m := range d.Members {
			absent := object(member("properties", object(member(m.Name, falseSchema))))
			var present *jsonorder.Value
			switch {
			case m.Value.Kind == jsonorder.Array && kw != "dependentSchemas":
				names := []*jsonorder.Value{str(m.Name)}
				for _, it := range m.Value.Items {
					if it.Kind != jsonorder.String {
						c.fail(path+"/"+kw, kw, "a dependency must list property names")
						return nil, false
					}
					names = append(names, it)
				}
				present = object(member("required", array(names...)))
			case kw != "dependentRequired":
				present = allOf(object(member("required", array(str(m.Name)))), m.Value)
			default:
				c.fail(path+"/"+kw, kw, "a dependency must list property names")
				return nil, false
			}
			parts = append(parts, anyOf(absent, present))
		}
	}
	if len(parts) == 0 {
		return object(rest...), true
	}
	return object(append(rest, member("allOf", array(parts...)))...), true
}

func isTrue(s *jsonorder.Value) bool {
	switch s.Kind {
	case jsonorder.Bool:
		return s.Bool
	case jsonorder.Object:
		return !slices.ContainsFunc(s.Members, func(m jsonorder.Member) bool { return vocabulary[m.Name] })
	}
	return false
}

// The JSON types a keyword asserts on, for negation: "minimum" holds for
// every value that is no number, so "not minimum" only for the numbers
// below.
var (
	numberTypes = []string{"number"}
	stringTypes = []string{"string"}
	arrayTypes  = []string{"array"}
	objectTypes = []string{"object"}
)

// negate returns a schema that holds for exactly the values s rejects,
// or nil and the reason it cannot.
func (c *schemaCompiler) negate(s *jsonorder.Value, depth int) (*jsonorder.Value, string) {
	if depth > negateDepth {
		return nil, "negations nested too deep"
	}
	switch s.Kind {
	case jsonorder.Bool:
		return &jsonorder.Value{Kind: jsonorder.Bool, Bool: !s.Bool}, ""
	case jsonorder.Object:
	default:
		return nil, "a schema must be an object or a boolean"
	}
	var ms []jsonorder.Member
	for _, m := range s.Members {
		if vocabulary[m.Name] {
			ms = append(ms, m)
		}
	}
	if r := s.Get("$ref"); r != nil {
		if len(ms) > 1 && !c.refAlone {
			return nil, "$ref beside other keywords"
		}
		t := (&disjointProof{c: c}).pointer(r.Str)
		if r.Kind != jsonorder.String || t == nil {
			return nil, fmt.Sprintf("reference %s cannot be followed", r.Str)
		}
		return c.negate(t, depth+1)
	}
	has := func(kw string) bool { return s.Get(kw) != nil }
	var alts []*jsonorder.Value
	for _, m := range ms {
		var neg *jsonorder.Value
		why := ""
		x := m.Value
		switch m.Name {
		case "type":
			neg, why = notType(x)
		case "not":
			neg = x
		case "anyOf", "allOf":
			if x.Kind != jsonorder.Array || len(x.Items) == 0 {
				return nil, m.Name + " must be a non-empty array"
			}
			var each []*jsonorder.Value
			for _, b := range x.Items {
				nb, w := c.negate(b, depth+1)
				if nb == nil {
					return nil, w
				}
				each = append(each, nb)
			}
			if m.Name == "anyOf" {
				neg = allOf(each...)
			} else {
				neg = anyOf(each...)
			}
		case "required":
			if x.Kind != jsonorder.Array {
				return nil, "required must be an array"
			}
			var each []*jsonorder.Value
			for _, it := range x.Items {
				if it.Kind != jsonorder.String {
					return nil, "required must list strings"
				}
				each = append(each, object(member("type", str("object")), member("properties", object(member(it.Str, falseSchema)))))
			}
			neg = anyOf(each...)
		case "enum", "const":
			neg, why = notValues(s, m.Name)
		case "minProperties", "maxProperties", "minItems", "maxItems", "minLength", "maxLength":
			neg, why = notCount(m.Name, x)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if has("exclusiveMinimum") && s.Get("exclusiveMinimum").Kind == jsonorder.Bool ||
				has("exclusiveMaximum") && s.Get("exclusiveMaximum").Kind == jsonorder.Bool {
				return nil, "draft 4's boolean exclusive bounds"
			}
			neg, why = notBound(m.Name, x)
		case "properties":
			if has("additionalProperties") || has("patternProperties") || has("unevaluatedProperties") {
				return nil, "properties beside additionalProperties or patternProperties"
			}
			if x.Kind != jsonorder.Object {
				return nil, "properties must be an object"
			}
			var each []*jsonorder.Value
			for _, p := range x.Members {
				np, w := c.negate(p.Value, depth+1)
				if np == nil {
					return nil, w
				}
				each = append(each, object(member("type", str("object")), member("required", array(str(p.Name))),
					member("properties", object(member(p.Name, np)))))
			}
			neg = anyOf(each...)
		case "items":
			// Some item (after no prefix) breaks the items schema: an
			// array containing a value of its negation.
			if has("prefixItems") || x.Kind == jsonorder.Array {
				return nil, fmt.Sprintf("keyword %q", m.Name)
			}
			nx, w := c.negate(x, depth+1)
			if nx == nil {
				return nil, w
			}
			neg = object(member("type", str("array")), member("contains", nx))
		case "contains":
			if has("minContains") || has("maxContains") {
				return nil, fmt.Sprintf("keyword %q", m.Name)
			}
			// No item matches: every item meets the negation.
			nx, w := c.negate(x, depth+1)
			if nx == nil {
				return nil, w
			}
			neg = object(member("type", str("array")), member("items", nx))
		case "format":
			if x.Kind == jsonorder.String && !knownFormats[x.Str] {
				continue // an unknown format asserts nothing
			}
			return nil, fmt.Sprintf("keyword %q", m.Name)
		default:
			return nil, fmt.Sprintf("keyword %q", m.Name)
		}
		if neg == nil {
			return nil, why
		}
		alts = append(alts, neg)
	}
	return anyOf(alts...), ""
}

// exceptKeyword is the compiler's own keyword for "a string other than
// these", which negated enum and const lists become. Its name cannot be
// written by accident in a schema.
const exceptKeyword = "\x00except"

// patternsKeyword is the compiler's own keyword for further patterns a
// string must match besides "pattern", which two patterns merged from
// allOf branches become.
const patternsKeyword = "\x00patterns"

// conditionalOn reports whether members hold a conditional keyword.
func conditionalOn(ms []jsonorder.Member) bool {
	return slices.ContainsFunc(ms, func(m jsonorder.Member) bool { return slices.Contains(conditionals, m.Name) })
}

// knownFormats are the format names JSON Schema defines (drafts 4 to
// 2020-12) and OpenAPI's.
var knownFormats = map[string]bool{
	"date-time": true, "date": true, "time": true, "duration": true, "email": true, "idn-email": true,
	"hostname": true, "idn-hostname": true, "ipv4": true, "ipv6": true, "uri": true, "uri-reference": true,
	"iri": true, "iri-reference": true, "uuid": true, "uri-template": true, "json-pointer": true,
	"relative-json-pointer": true, "regex": true, "byte": true,
}

// otherTypes returns the JSON types (number standing for integer too)
// none of ts covers; ok is false when ts holds integer without number,
// whose complement (fractional numbers) no type names.
func otherTypes(ts []string) ([]string, bool) {
	if slices.Contains(ts, "integer") && !slices.Contains(ts, "number") {
		return nil, false
	}
	var out []string
	for _, t := range []string{"null", "boolean", "object", "array", "string", "number"} {
		if !slices.Contains(ts, t) {
			out = append(out, t)
		}
	}
	return out, true
}

func typeSchema(ts []string) *jsonorder.Value {
	if len(ts) == 0 {
		return falseSchema
	}
	items := make([]*jsonorder.Value, len(ts))
	for i, t := range ts {
		items[i] = str(t)
	}
	return object(member("type", array(items...)))
}

func notType(x *jsonorder.Value) (*jsonorder.Value, string) {
	names := typeNames(x)
	if names == nil {
		return nil, "malformed type"
	}
	others, ok := otherTypes(names)
	if !ok {
		return nil, `"integer" without "number" (its complement, fractional numbers, is no type)`
	}
	return typeSchema(others), ""
}

// only is "a value of one of ts that neg holds for": a keyword that
// asserts on one type holds for every value of the others, so its
// negation holds for none of them.
func only(ts []string, neg *jsonorder.Value) *jsonorder.Value {
	return object(append([]jsonorder.Member{member("type", typeSchema(ts).Get("type"))}, neg.Members...)...)
}

func notCount(kw string, x *jsonorder.Value) (*jsonorder.Value, string) {
	n, ok := countOf(x)
	if !ok {
		return nil, kw + " must be a non-negative integer"
	}
	ts := map[string][]string{"Properties": objectTypes, "Items": arrayTypes, "Length": stringTypes}[kw[3:]]
	if strings.HasPrefix(kw, "min") {
		if n == 0 {
			return falseSchema, ""
		}
		return only(ts, object(member("max"+kw[3:], number(n-1)))), ""
	}
	return only(ts, object(member("min"+kw[3:], number(n+1)))), ""
}

func countOf(x *jsonorder.Value) (int64, bool) {
	if x.Kind != jsonorder.Number {
		return 0, false
	}
	r, ok := exactRat(string(x.Number))
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

func number(n int64) *jsonorder.Value {
	return &jsonorder.Value{Kind: jsonorder.Number, Number: jsonNumber(n)}
}

func notBound(kw string, x *jsonorder.Value) (*jsonorder.Value, string) {
	if x.Kind != jsonorder.Number {
		return nil, kw + " must be a number"
	}
	flip := map[string]string{"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
		"exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}[kw]
	return only(numberTypes, object(member(flip, x))), ""
}

// notValues negates enum or const where the values left are a type's
// whole domain less the listed values, for null and booleans; other
// listed values are refused.
func notValues(s *jsonorder.Value, kw string) (*jsonorder.Value, string) {
	if len(s.Members) > 1 && slices.ContainsFunc(s.Members, func(m jsonorder.Member) bool {
		return m.Name != kw && vocabulary[m.Name]
	}) {
		return nil, kw + " beside other keywords"
	}
	vals, ok := listed(s)
	if !ok {
		return nil, kw + " must be an array"
	}
	if kw == "enum" && s.Get("const") != nil {
		return nil, "enum beside const"
	}
	null, yes, no := false, false, false
	var strs []*jsonorder.Value
	for _, v := range vals {
		switch {
		case v.Kind == jsonorder.Null:
			null = true
		case v.Kind == jsonorder.Bool && v.Bool:
			yes = true
		case v.Kind == jsonorder.Bool:
			no = true
		case v.Kind == jsonorder.String:
			strs = append(strs, v)
		default:
			return nil, fmt.Sprintf("%s listing numbers, arrays or objects", kw)
		}
	}
	ts := []string{"object", "array", "number"}
	var alts []*jsonorder.Value
	if len(strs) == 0 {
		ts = append(ts, "string")
	} else {
		alts = append(alts, object(member("type", str("string")), member(exceptKeyword, array(strs...))))
	}
	if !null {
		ts = append(ts, "null")
	}
	switch {
	case !yes && !no:
		ts = append(ts, "boolean")
	case yes && !no:
		alts = append(alts, object(member("const", &jsonorder.Value{Kind: jsonorder.Bool})))
	case no && !yes:
		alts = append(alts, object(member("const", trueSchema)))
	}
	return anyOf(append([]*jsonorder.Value{typeSchema(ts)}, alts...)...), ""
}

// fingerprint is a hash of v's content, memoised by node, to tell apart
// merged schemas that share a path.
func (c *schemaCompiler) fingerprint(v *jsonorder.Value) uint64 {
	if h, ok := c.prints[v]; ok {
		return h
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%t|%s|%q|", v.Kind, v.Bool, v.Number, v.Str)
	for _, it := range v.Items {
		fmt.Fprintf(h, "i%x,", c.fingerprint(it))
	}
	for _, m := range v.Members {
		fmt.Fprintf(h, "m%q=%x,", m.Name, c.fingerprint(m.Value))
	}
	x := h.Sum64()
	c.prints[v] = x
	return x
}

// exactRat parses a number literal exactly; ok is false when it is
// malformed or its exponent too large to expand cheaply.
func exactRat(s string) (*big.Rat, bool) {
	r := exactNumber(&jsonorder.Value{Kind: jsonorder.Number, Number: json.Number(s)})
	return r, r != nil
}

func jsonNumber(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

// mergeObjects combines the properties and additionalProperties of two
// schemas into one pair that asserts what both do: a name listed on one
// side only must also match the other side's additionalProperties, and
// names listed on neither must match both. It returns a's members with
// the pair replaced, and b's members left to merge. ok is false (and
// nothing is combined) when a side has patternProperties or
// unevaluatedProperties, which see names this cannot follow.
func mergeObjects(a, b []jsonorder.Member) (out, rest []jsonorder.Member, ok bool) {
	get := func(ms []jsonorder.Member, name string) *jsonorder.Value {
		for _, m := range ms {
			if m.Name == name {
				return m.Value
			}
		}
		return nil
	}
	pa, pb := get(a, "properties"), get(b, "properties")
	aa, ab := get(a, "additionalProperties"), get(b, "additionalProperties")
	if pa == nil && aa == nil || pb == nil && ab == nil {
		return slices.Clone(a), b, true // at most one side speaks of members
	}
	for _, ms := range [][]jsonorder.Member{a, b} {
		if get(ms, "patternProperties") != nil || get(ms, "unevaluatedProperties") != nil {
			return slices.Clone(a), b, aa == nil && ab == nil
		}
	}
	if pa != nil && (pa.Kind != jsonorder.Object || hasDuplicateNames(pa)) || pb != nil && (pb.Kind != jsonorder.Object || hasDuplicateNames(pb)) {
		return slices.Clone(a), b, false
	}
	side := func(p, addl *jsonorder.Value, name string) *jsonorder.Value {
		if v := p.Get(name); v != nil {
			return v
		}
		return addl
	}
	var names []string
	for _, p := range []*jsonorder.Value{pa, pb} {
		if p == nil {
			continue
		}
		for _, m := range p.Members {
			if !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	props := object()
	for _, n := range names {
		props.Members = append(props.Members, member(n, both(side(pa, aa, n), side(pb, ab, n))))
	}
	for _, m := range a {
		if m.Name != "properties" && m.Name != "additionalProperties" {
			out = append(out, m)
		}
	}
	out = append(out, member("properties", props))
	if addl := both(aa, ab); addl != nil {
		out = append(out, member("additionalProperties", addl))
	}
	for _, m := range b {
		if m.Name != "properties" && m.Name != "additionalProperties" {
			rest = append(rest, m)
		}
	}
	return out, rest, true
}

// both is the conjunction of two optional schemas (nil: no constraint).
func both(x, y *jsonorder.Value) *jsonorder.Value {
	switch {
	case x == nil:
		return y
	case y == nil || x == y:
		return x
	}
	return allOf(x, y)
}

// distribute conjoins two anyOf or two oneOf lists (or one of each) of
// the same keyword name by multiplying out: anyOf X and anyOf Y is anyOf
// over x ∧ anyOf Y for each x of X; oneOf X and oneOf Y is oneOf over x ∧
// oneOf Y (exactly one x, and exactly one y). ok is false past
// maxDistribute branches.
func distribute(name string, x, y *jsonorder.Value) (*jsonorder.Value, bool) {
	if name != "anyOf" && name != "oneOf" && name != "allOf" && name != "not" {
		return nil, false
	}
	if name == "not" {
		return anyOf(x, y), true // neither x nor y
	}
	if x.Kind != jsonorder.Array || y.Kind != jsonorder.Array {
		return nil, false
	}
	if name == "allOf" {
		return array(append(slices.Clone(x.Items), y.Items...)...), true
	}
	if len(x.Items)*len(y.Items) > maxDistribute {
		return nil, false
	}
	out := array()
	other := object(member(name, y))
	for _, b := range x.Items {
		out.Items = append(out.Items, allOf(b, other))
	}
	return out, true
}

// exceptStrings is the character automaton of every string but the
// listed ones: a trie of the listed strings whose nodes accept unless a
// listed string ends there, and leave it for a free loop at the first
// character no listed string continues with.
func exceptStrings(list *jsonorder.Value) (*cnfa, frag) {
	a := &cnfa{}
	free, exit := a.add(), a.add()
	a.char(free, allRunes, free)
	a.eps(free, exit)
	var build func(at int32, names [][]rune)
	build = func(at int32, names [][]rune) {
		ends := false
		kids := map[rune][][]rune{}
		var order []rune
		for _, nm := range names {
			if len(nm) == 0 {
				ends = true
				continue
			}
			if _, ok := kids[nm[0]]; !ok {
				order = append(order, nm[0])
			}
			kids[nm[0]] = append(kids[nm[0]], nm[1:])
		}
		if !ends {
			a.eps(at, exit)
		}
		var set runeSet
		for _, r := range order {
			set = append(set, [2]rune{r, r})
		}
		if rest := allRunes.minus(set.normalize()); len(rest) > 0 {
			a.char(at, rest, free)
		}
		for _, r := range order {
			child := a.add()
			a.char(at, runeSet{{r, r}}, child)
			build(child, kids[r])
		}
	}
	root := a.add()
	var names [][]rune
	for _, it := range list.Items {
		if it.Kind == jsonorder.String {
			names = append(names, []rune(it.Str))
		}
	}
	build(root, names)
	return a.freeze(), frag{root, exit}
}

// surelyEqual reports whether two literals are the same JSON value by
// every reading: numbers equal as exact rationals, objects with the same
// members (no name twice) in any order.
func surelyEqual(x, y *jsonorder.Value) bool {
	if x.Kind != y.Kind {
		return false
	}
	switch x.Kind {
	case jsonorder.Null:
		return true
	case jsonorder.Bool:
		return x.Bool == y.Bool
	case jsonorder.String:
		return x.Str == y.Str
	case jsonorder.Number:
		rx, ry := exactNumber(x), exactNumber(y)
		return rx != nil && ry != nil && rx.Cmp(ry) == 0
	case jsonorder.Array:
		return len(x.Items) == len(y.Items) && !slices.ContainsFunc(x.Items, func(it *jsonorder.Value) bool {
			i := slices.Index(x.Items, it)
			return !surelyEqual(it, y.Items[i])
		})
	case jsonorder.Object:
		if hasDuplicateNames(x) || hasDuplicateNames(y) || len(x.Members) != len(y.Members) {
			return false
		}
		for _, m := range x.Members {
			o := y.Get(m.Name)
			if o == nil || !surelyEqual(m.Value, o) {
				return false
			}
		}
		return true
	}
	return false
}

// maxExclusive bounds the branches of a oneOf made exclusive by
// negation (each branch takes the negations of all the others).
const maxExclusive = 8

// exclusive rewrites the branches of a oneOf whose branches may overlap
// into branches that cannot: branch i becomes branch i and the negation
// of every other branch, so a value matches exactly one original branch
// exactly when it matches one new branch. ok is false when a branch
// cannot be negated exactly.
func (c *schemaCompiler) exclusive(branches []*jsonorder.Value) ([]*jsonorder.Value, bool) {
	if len(branches) > maxExclusive {
		return nil, false
	}
	negs := make([]*jsonorder.Value, len(branches))
	for i, b := range branches {
		neg, _ := c.negate(b, 0)
		if neg == nil {
			return nil, false
		}
		negs[i] = neg
	}
	out := make([]*jsonorder.Value, len(branches))
	for i, b := range branches {
		parts := []*jsonorder.Value{b}
		for j, neg := range negs {
			if j != i {
				parts = append(parts, neg)
			}
		}
		out[i] = allOf(parts...)
	}
	return out, true
}
