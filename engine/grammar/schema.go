package grammar

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prism-local/prism/internal/jsonorder"
)

// Bounds on what a schema may ask for. Counted repetition is unrolled into
// states, so counts above these are refused rather than half-enforced.
const (
	maxCount  = 4096    // minItems/maxItems/minLength/maxLength beyond this are refused
	maxStates = 4 << 20 // automaton size cap per grammar
	// gapSpaces is the whitespace bound: between two JSON tokens at most
	// one line break (\n or \r\n) followed by at most gapSpaces spaces or
	// tabs.
	gapSpaces = 20
)

// literalKeywords assert on one type each; beside enum or const they are
// decided for each listed value when the schema compiles.
var literalKeywords = map[string]bool{
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true, "required": true,
}

// annotations are keywords that assert nothing and are ignored.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true,
	"$id": true, "id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true, "$anchor": true, "contentEncoding": true, "contentMediaType": true,
	"$vocabulary": true, "$dynamicAnchor": true,
}

// vocabulary holds the JSON Schema keywords (drafts 4 to 2020-12) that can
// assert something. A name outside it and outside annotations is no keyword
// at all ("readonly", "x-order", a vendor's "esriDocumentation"): JSON
// Schema ignores it, and so does the compiler.
var vocabulary = map[string]bool{
	"type": true, "enum": true, "const": true, "format": true, "pattern": true, "minLength": true,
	"maxLength": true, "minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "items": true, "prefixItems": true, "additionalItems": true, "minItems": true,
	"maxItems": true, "uniqueItems": true, "contains": true, "minContains": true, "maxContains": true,
	"properties": true, "required": true, "additionalProperties": true, "patternProperties": true,
	"propertyNames": true, "minProperties": true, "maxProperties": true, "dependencies": true,
	"dependentRequired": true, "dependentSchemas": true, "unevaluatedItems": true,
	"unevaluatedProperties": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true,
	"then": true, "else": true, "$ref": true, "$dynamicRef": true, "$recursiveRef": true,
}

type schemaCompiler struct {
	n      *nfa
	root   *jsonorder.Value
	strict bool
	param  string
	suffix string
	after  string
	// afterOpen makes the free text before after optional (Options.AfterOpen).
	afterOpen string
	warnings  []Warning
	subs      map[*jsonorder.Value]int32
	merged    map[string]*jsonorder.Value
	anySub    int32
	gapSub    int32
	err       error
}

func newSchemaCompiler(root *jsonorder.Value, o Options) *schemaCompiler {
	c := &schemaCompiler{n: &nfa{}, root: root, strict: o.Strict, param: o.param(), suffix: o.Suffix, after: o.After, afterOpen: o.AfterOpen,
		subs: map[*jsonorder.Value]int32{}, merged: map[string]*jsonorder.Value{}, anySub: -1, gapSub: -1}
	return c
}

func (c *schemaCompiler) fail(path, keyword, format string, args ...any) {
	if c.err == nil {
		c.err = &SchemaError{Param: c.param, Path: path, Keyword: keyword, Message: fmt.Sprintf(format, args...)}
	}
}

// unsupported handles a keyword Prism cannot enforce: an error under
// strict, a warning otherwise.
func (c *schemaCompiler) unsupported(path, keyword, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.strict {
		c.fail(path, keyword, "%s", msg)
		return
	}
	c.warnings = append(c.warnings, Warning{Path: path, Keyword: keyword, Message: msg})
}

// gap matches the bounded whitespace allowed between JSON tokens.
func (c *schemaCompiler) gap() frag {
	if c.gapSub < 0 {
		n := c.n
		c.gapSub = n.add()
		nl := n.alt(n.lit("\n"), n.lit("\r\n"))
		sp := n.repeat(0, gapSpaces, func() frag {
			in, out := n.add(), n.add()
			n.edge(in, ' ', ' ', out)
			n.edge(in, '\t', '\t', out)
			return frag{in, out}
		})
		f := n.seq(n.opt(nl), sp)
		c.finishSub(c.gapSub, f)
	}
	return c.n.call(c.gapSub)
}

func (c *schemaCompiler) finishSub(entry int32, f frag) {
	n := c.n
	n.eps(entry, f.in)
	exit := n.add()
	n.eps(f.out, exit)
	n.st[exit].exit = true
}

// none is a fragment that matches nothing (trim removes it).
func (c *schemaCompiler) none() frag { return frag{c.n.add(), c.n.add()} }

// value returns a call of the sub-network for schema node v.
func (c *schemaCompiler) value(v *jsonorder.Value, path string) frag {
	return c.n.call(c.sub(v, path))
}

func (c *schemaCompiler) sub(v *jsonorder.Value, path string) int32 {
	if e, ok := c.subs[v]; ok {
		return e
	}
	e := c.n.add()
	c.subs[v] = e
	f := c.body(v, path)
	c.finishSub(e, f)
	return e
}

func (c *schemaCompiler) body(v *jsonorder.Value, path string) frag {
	if c.err != nil || len(c.n.st) > maxStates {
		if c.err == nil {
			c.fail(path, "", "the schema is too large to compile (over %d automaton states)", maxStates)
		}
		return c.none()
	}
	switch v.Kind {
	case jsonorder.Bool:
		if v.Bool {
			return c.anyValue()
		}
		return c.none()
	case jsonorder.Object:
	default:
		c.fail(path, "", "a schema must be an object or a boolean")
		return c.none()
	}
	assertions := 0
	for _, m := range v.Members {
		if !annotations[m.Name] {
			assertions++
		}
	}
	if r := v.Get("$ref"); r != nil {
		if assertions > 1 {
			return c.combine(v, path, "$ref")
		}
		t, p := c.resolve(r, path)
		if t == nil {
			return c.none()
		}
		return c.value(t, p)
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if v.Get(kw) != nil {
			return c.combine(v, path, kw)
		}
	}
	for _, kw := range []string{"not", "if", "then", "else", "dependentSchemas", "dependencies", "dependentRequired",
		"patternProperties", "propertyNames", "contains", "minContains", "maxContains", "multipleOf",
		"unevaluatedItems", "$dynamicRef", "$recursiveRef"} {
		// multipleOf is decided for each listed value of an enum or const.
		if v.Get(kw) != nil && !(kw == "multipleOf" && (v.Get("enum") != nil || v.Get("const") != nil)) {
			c.unsupported(path, kw, "not supported in constrained decoding")
		}
	}
	types, ok := c.types(v, path)
	if !ok {
		return c.none()
	}
	if e := v.Get("enum"); e != nil {
		return c.enum(v, e.Items, types, path, "enum", e.Kind == jsonorder.Array)
	}
	if k := v.Get("const"); k != nil {
		return c.enum(v, []*jsonorder.Value{k}, types, path, "const", true)
	}
	var alts []frag
	for _, t := range types {
		switch t {
		case "null":
			alts = append(alts, c.n.lit("null"))
		case "boolean":
			alts = append(alts, c.n.alt(c.n.lit("true"), c.n.lit("false")))
		case "string":
			alts = append(alts, c.stringValue(v, path))
		case "number":
			alts = append(alts, c.number(v, path, false))
		case "integer":
			if !slices.Contains(types, "number") {
				alts = append(alts, c.number(v, path, true))
			}
		case "object":
			alts = append(alts, c.object(v, path))
		case "array":
			alts = append(alts, c.array(v, path))
		}
	}
	if len(alts) == 0 {
		return c.none()
	}
	return c.n.alt(alts...)
}

var allTypes = []string{"null", "boolean", "object", "array", "string", "number", "integer"}

// types returns the types v allows.
func (c *schemaCompiler) types(v *jsonorder.Value, path string) ([]string, bool) {
	t := v.Get("type")
	if t == nil {
		return allTypes, true
	}
	var names []string
	switch t.Kind {
	case jsonorder.String:
		names = []string{t.Str}
	case jsonorder.Array:
		for _, it := range t.Items {
			if it.Kind != jsonorder.String {
				c.fail(path+"/type", "type", "a list of types must hold strings")
				return nil, false
			}
			names = append(names, it.Str)
		}
	default:
		c.fail(path+"/type", "type", "must be a string or a list of strings")
		return nil, false
	}
	for _, n := range names {
		if !slices.Contains(allTypes, n) {
			c.fail(path+"/type", "type", "unknown type %q", n)
			return nil, false
		}
	}
	return names, true
}

// resolve follows a $ref within the document.
func (c *schemaCompiler) resolve(r *jsonorder.Value, path string) (*jsonorder.Value, string) {
	if r.Kind != jsonorder.String {
		c.fail(path+"/$ref", "$ref", "must be a string")
		return nil, ""
	}
	ref := r.Str
	if !strings.HasPrefix(ref, "#") {
		c.unsupported(path+"/$ref", "$ref", "only references within the schema (#...) are supported, not %q", ref)
		return nil, ""
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		c.fail(path+"/$ref", "$ref", "malformed reference %q", ref)
		return nil, ""
	}
	cur := c.root
	if frag != "" {
		if !strings.HasPrefix(frag, "/") {
			c.unsupported(path+"/$ref", "$ref", "anchor references (%q) are not supported; use a JSON pointer", ref)
			return nil, ""
		}
		for _, tok := range strings.Split(frag[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch cur.Kind {
			case jsonorder.Object:
				cur = cur.Get(tok)
			case jsonorder.Array:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(cur.Items) {
					cur = nil
				} else {
					cur = cur.Items[i]
				}
			default:
				cur = nil
			}
			if cur == nil {
				c.fail(path+"/$ref", "$ref", "reference %q points at nothing", ref)
				return nil, ""
			}
		}
	}
	return cur, frag
}

// combine handles allOf, anyOf, oneOf and $ref with sibling keywords.
// Siblings are merged into each branch when the two share no keyword (the
// merge is then exactly the conjunction); anything else is refused.
func (c *schemaCompiler) combine(v *jsonorder.Value, path, kw string) frag {
	var siblings []jsonorder.Member
	for _, m := range v.Members {
		if m.Name != kw && !annotations[m.Name] {
			siblings = append(siblings, m)
		}
	}
	var branches []*jsonorder.Value
	var paths []string
	if kw == "$ref" {
		t, p := c.resolve(v.Get(kw), path)
		if t == nil {
			return c.none()
		}
		branches, paths = []*jsonorder.Value{t}, []string{p}
	} else {
		list := v.Get(kw)
		if list.Kind != jsonorder.Array || len(list.Items) == 0 {
			c.fail(path+"/"+kw, kw, "must be a non-empty array of schemas")
			return c.none()
		}
		for i, b := range list.Items {
			branches = append(branches, b)
			paths = append(paths, fmt.Sprintf("%s/%s/%d", path, kw, i))
		}
	}
	if kw == "oneOf" && len(branches) > 1 && !c.disjoint(branches, siblings) {
		c.unsupported(path, "oneOf", "branches that may overlap are enforced as anyOf (a value matching two of them is not excluded)")
	}
	if kw == "allOf" {
		acc := siblings
		accPath := path
		for i, b := range branches {
			m, ok := c.merge(acc, b, path, kw)
			if !ok {
				return c.none()
			}
			acc, accPath = m.Members, paths[i]
		}
		_ = accPath
		return c.value(c.intern(path+"/allOf", &jsonorder.Value{Kind: jsonorder.Object, Members: acc}), path)
	}
	var alts []frag
	for i, b := range branches {
		if len(siblings) == 0 {
			alts = append(alts, c.value(b, paths[i]))
			continue
		}
		m, ok := c.merge(siblings, b, path, kw)
		if !ok {
			return c.none()
		}
		alts = append(alts, c.value(c.intern(paths[i]+"+"+kw, m), paths[i]))
	}
	return c.n.alt(alts...)
}

// intern keeps one merged schema per path, so recursion through merged
// schemas still terminates.
func (c *schemaCompiler) intern(key string, v *jsonorder.Value) *jsonorder.Value {
	if m, ok := c.merged[key]; ok {
		return m
	}
	c.merged[key] = v
	return v
}

// merge returns siblings ∧ branch as one schema, when that is exact.
func (c *schemaCompiler) merge(siblings []jsonorder.Member, b *jsonorder.Value, path, kw string) (*jsonorder.Value, bool) {
	for hops := 0; b.Kind == jsonorder.Object && b.Get("$ref") != nil && len(b.Members) == 1; hops++ {
		if hops > 32 {
			c.fail(path, "$ref", "reference chain too long")
			return nil, false
		}
		b, _ = c.resolve(b.Get("$ref"), path)
		if b == nil {
			return nil, false
		}
	}
	if b.Kind == jsonorder.Bool {
		if !b.Bool {
			return &jsonorder.Value{Kind: jsonorder.Bool}, true
		}
		return &jsonorder.Value{Kind: jsonorder.Object, Members: siblings}, true
	}
	if b.Kind != jsonorder.Object {
		c.fail(path, kw, "branches must be schemas")
		return nil, false
	}
	has := map[string]bool{}
	for _, m := range siblings {
		has[m.Name] = true
	}
	out := slices.Clone(siblings)
	bHas := map[string]bool{}
	for _, m := range b.Members {
		if annotations[m.Name] {
			continue
		}
		bHas[m.Name] = true
		if has[m.Name] {
			i := slices.IndexFunc(out, func(o jsonorder.Member) bool { return o.Name == m.Name })
			if x, ok := conjoin(m.Name, out[i].Value, m.Value, out, b.Members); ok {
				out[i].Value = x
				continue
			}
			c.unsupported(path, kw, "keyword %q both beside %s and inside it cannot be combined", m.Name, kw)
			if c.err != nil {
				return nil, false
			}
			continue
		}
		out = append(out, m)
	}
	// additionalProperties only sees the properties beside it.
	if (has["additionalProperties"] && (bHas["properties"] || bHas["required"])) ||
		(bHas["additionalProperties"] && (has["properties"] || has["required"])) {
		c.unsupported(path, kw, "additionalProperties combined with properties from another branch cannot be enforced")
		if c.err != nil {
			return nil, false
		}
	}
	return &jsonorder.Value{Kind: jsonorder.Object, Members: out}, true
}

// conjoin returns one value of keyword name that asserts what both x and
// y do, for the keywords where that is exact: the common types, the
// tighter of two bounds, the union of two required lists. ok is false for
// any other keyword or value. a and b are the two schemas' members (a
// numeric bound is not merged where a draft-4 boolean exclusive flag
// changes its meaning).
func conjoin(name string, x, y *jsonorder.Value, a, b []jsonorder.Member) (*jsonorder.Value, bool) {
	switch name {
	case "type":
		tx, ty := typeNames(x), typeNames(y)
		if tx == nil || ty == nil {
			return nil, false
		}
		out := &jsonorder.Value{Kind: jsonorder.Array, Items: []*jsonorder.Value{}}
		for _, t := range tx {
			u := ""
			switch {
			case slices.Contains(ty, t):
				u = t
			case t == "integer" && slices.Contains(ty, "number"):
				u = "integer"
			case t == "number" && slices.Contains(ty, "integer"):
				u = "integer"
			}
			if u != "" && !slices.ContainsFunc(out.Items, func(v *jsonorder.Value) bool { return v.Str == u }) {
				out.Items = append(out.Items, &jsonorder.Value{Kind: jsonorder.String, Str: u})
			}
		}
		return out, true
	case "required":
		if x.Kind != jsonorder.Array || y.Kind != jsonorder.Array {
			return nil, false
		}
		out := &jsonorder.Value{Kind: jsonorder.Array, Items: slices.Clone(x.Items)}
		for _, it := range y.Items {
			if it.Kind != jsonorder.String {
				return nil, false
			}
			if !slices.ContainsFunc(out.Items, func(v *jsonorder.Value) bool { return v.Kind == jsonorder.String && v.Str == it.Str }) {
				out.Items = append(out.Items, it)
			}
		}
		return out, true
	case "maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum",
		"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum":
		if x.Kind != jsonorder.Number || y.Kind != jsonorder.Number {
			return nil, false
		}
		if name == "maximum" || name == "minimum" {
			flag := "exclusiveMaximum"
			if name == "minimum" {
				flag = "exclusiveMinimum"
			}
			for _, ms := range [][]jsonorder.Member{a, b} {
				for _, m := range ms {
					if m.Name == flag && m.Value.Kind == jsonorder.Bool {
						return nil, false
					}
				}
			}
		}
		rx, okx := new(big.Rat).SetString(string(x.Number))
		ry, oky := new(big.Rat).SetString(string(y.Number))
		if !okx || !oky {
			return nil, false
		}
		upper := strings.HasPrefix(name, "max") || name == "exclusiveMaximum"
		if (rx.Cmp(ry) <= 0) == upper {
			return x, true
		}
		return y, true
	}
	return nil, false
}

// typeNames lists the names of a type keyword; nil when malformed or
// when a name is unknown.
func typeNames(t *jsonorder.Value) []string {
	items := []*jsonorder.Value{t}
	if t.Kind == jsonorder.Array {
		items = t.Items
	}
	names := []string{}
	for _, it := range items {
		if it.Kind != jsonorder.String || !slices.Contains(allTypes, it.Str) {
			return nil
		}
		names = append(names, it.Str)
	}
	return names
}

// enum matches the listed values (filtered by type), spelled as written.
func (c *schemaCompiler) enum(v *jsonorder.Value, values []*jsonorder.Value, types []string, path, kw string, ok bool) frag {
	if !ok {
		c.fail(path+"/"+kw, kw, "must be an array")
		return c.none()
	}
	for _, m := range v.Members {
		if vocabulary[m.Name] && !literalKeywords[m.Name] && m.Name != "type" && m.Name != kw && !(kw == "const" && m.Name == "enum") {
			c.unsupported(path, m.Name, "cannot be combined with %s", kw)
			if c.err != nil {
				return c.none()
			}
		}
	}
	// The keywords that assert on one type hold or not for each listed
	// value of that type, decided here.
	check := c.literalCheck(v, path)
	if c.err != nil {
		return c.none()
	}
	var alts []frag
	for _, e := range values {
		if !typeAllows(types, e) || !check(e) {
			continue
		}
		alts = append(alts, c.literal(e))
	}
	if len(alts) == 0 {
		return c.none()
	}
	return c.n.alt(alts...)
}

func typeAllows(types []string, e *jsonorder.Value) bool {
	for _, t := range types {
		switch {
		case t == "null" && e.Kind == jsonorder.Null,
			t == "boolean" && e.Kind == jsonorder.Bool,
			t == "string" && e.Kind == jsonorder.String,
			t == "number" && e.Kind == jsonorder.Number,
			t == "object" && e.Kind == jsonorder.Object,
			t == "array" && e.Kind == jsonorder.Array:
			return true
		case t == "integer" && e.Kind == jsonorder.Number:
			if f, err := strconv.ParseFloat(string(e.Number), 64); err == nil && f == math.Trunc(f) {
				return true
			}
		}
	}
	return false
}

// literal matches one JSON value, members in the order written, with
// gaps where JSON allows whitespace.
func (c *schemaCompiler) literal(e *jsonorder.Value) frag {
	n := c.n
	switch e.Kind {
	case jsonorder.Null:
		return n.lit("null")
	case jsonorder.Bool:
		return n.lit(strconv.FormatBool(e.Bool))
	case jsonorder.Number:
		return n.lit(string(e.Number))
	case jsonorder.String:
		return n.jsonStringLit(e.Str)
	case jsonorder.Array:
		parts := []frag{n.lit("["), c.gap()}
		for i, it := range e.Items {
			if i > 0 {
				parts = append(parts, n.lit(","), c.gap())
			}
			parts = append(parts, c.literal(it), c.gap())
		}
		return n.seq(append(parts, n.lit("]"))...)
	default:
		parts := []frag{n.lit("{"), c.gap()}
		for i, m := range e.Members {
			if i > 0 {
				parts = append(parts, n.lit(","), c.gap())
			}
			parts = append(parts, n.jsonStringLit(m.Name), c.gap(), n.lit(":"), c.gap(), c.literal(m.Value), c.gap())
		}
		return n.seq(append(parts, n.lit("}"))...)
	}
}

// count reads a non-negative integer keyword; -1 when absent, maxCount+1
// for any count above maxCount.
func (c *schemaCompiler) count(v *jsonorder.Value, path, kw string) int {
	return min(c.length(v, path, kw), maxCount+1)
}

// length reads a non-negative integer keyword; -1 when absent, and
// math.MaxInt32 for anything larger (the bounds an automaton can enforce
// are far below).
func (c *schemaCompiler) length(v *jsonorder.Value, path, kw string) int {
	x := v.Get(kw)
	if x == nil {
		return -1
	}
	f, err := strconv.ParseFloat(string(x.Number), 64)
	if x.Kind != jsonorder.Number || err != nil || f < 0 || f != math.Trunc(f) {
		c.fail(path+"/"+kw, kw, "must be a non-negative integer")
		return -1
	}
	return int(min(f, math.MaxInt32))
}

// anyValue is a call of the sub-network matching any JSON value.
func (c *schemaCompiler) anyValue() frag {
	if c.anySub < 0 {
		n := c.n
		c.anySub = n.add()
		f := n.alt(n.lit("null"), n.lit("true"), n.lit("false"), c.plainNumber(false),
			c.freeString(), c.anyObject(), c.anyArray())
		c.finishSub(c.anySub, f)
	}
	return c.n.call(c.anySub)
}

// anyObject matches any JSON object (JSON mode).
func (c *schemaCompiler) anyObject() frag {
	n := c.n
	member := func() frag {
		return n.seq(c.freeString(), c.gap(), n.lit(":"), c.gap(), c.anyValueCall(), c.gap())
	}
	more := n.star(n.seq(n.lit(","), c.gap(), member()))
	return n.seq(n.lit("{"), c.gap(), n.opt(n.seq(member(), more)), n.lit("}"))
}

func (c *schemaCompiler) anyArray() frag {
	n := c.n
	item := func() frag { return n.seq(c.anyValueCall(), c.gap()) }
	more := n.star(n.seq(n.lit(","), c.gap(), item()))
	return n.seq(n.lit("["), c.gap(), n.opt(n.seq(item(), more)), n.lit("]"))
}

// anyValueCall calls the any-value network (which must already exist or
// be under construction).
func (c *schemaCompiler) anyValueCall() frag { return c.n.call(c.anySub) }

// freeString matches any JSON string.
func (c *schemaCompiler) freeString() frag {
	n := c.n
	open, body, close := n.lit(`"`), n.add(), n.lit(`"`)
	n.jsonChar(body, body, allRunes)
	n.eps(open.out, body)
	n.eps(body, close.in)
	return frag{open.in, close.out}
}

// stringValue matches a string under v's string keywords. A pattern, a
// format or both are character automata (intersected when both are
// there), and length bounds are then a product with a count of
// characters; docs/structured-outputs.md, "Strings", says what is
// refused.
func (c *schemaCompiler) stringValue(v *jsonorder.Value, path string) frag {
	n := c.n
	a, f := c.stringPattern(v, path)
	if c.err != nil {
		return c.none()
	}
	if a == nil {
		return c.lengthString(v, path)
	}
	minL, maxL := c.length(v, path, "minLength"), c.length(v, path, "maxLength")
	if c.err != nil {
		return c.none()
	}
	if minL > 0 || maxL >= 0 {
		if maxL >= 0 && minL > maxL {
			return c.none()
		}
		p, pf, res := a.bounded(f, max(minL, 0), maxL)
		switch res {
		case boundEmpty:
			return c.none()
		case boundProduct:
			a, f = p, pf
		case boundTooLarge:
			kw := "maxLength"
			if maxL < 0 {
				kw = "minLength"
			}
			c.unsupported(path, kw, "this length bound together with the pattern or format needs an automaton over the size limit (%d); loosen the bound or the pattern", maxProduct)
			if c.err != nil {
				return c.none()
			}
		}
	}
	return n.seq(n.lit(`"`), c.spell(a, f), n.lit(`"`))
}

// stringPattern returns the character automaton of v's pattern and format
// (their intersection when both are there), or nil when v has neither or
// neither can be enforced.
func (c *schemaCompiler) stringPattern(v *jsonorder.Value, path string) (*cnfa, frag) {
	var a *cnfa
	var f frag
	if pattern := v.Get("pattern"); pattern != nil {
		if pattern.Kind != jsonorder.String {
			c.fail(path+"/pattern", "pattern", "must be a string")
			return nil, frag{}
		}
		pa, pf, err := c.pattern(pattern.Str, false)
		if err != nil {
			c.unsupported(path+"/pattern", "pattern", "%v", err)
		} else {
			a, f = pa, pf
		}
	}
	if format := v.Get("format"); format != nil {
		re, ok := formats[format.Str]
		if format.Kind != jsonorder.String || !ok {
			c.unsupported(path+"/format", "format", "format %q is not supported", format.Str)
			return a, f
		}
		fa, ff, err := c.pattern(re, true)
		if err != nil {
			c.fail(path+"/format", "format", "internal pattern for %q: %v", format.Str, err)
			return nil, frag{}
		}
		if a == nil {
			return fa, ff
		}
		p, pf, ok := intersect(a, f, fa, ff)
		if !ok {
			c.unsupported(path+"/format", "format", "format %q together with the pattern needs an automaton over the size limit (%d)", format.Str, maxProduct)
			return a, f
		}
		return p, pf
	}
	return a, f
}

// stringCheck returns a test of a string against v's string keywords
// (lengths in code points, pattern, format), for enum and const values;
// nil when v has none.
func (c *schemaCompiler) stringCheck(v *jsonorder.Value, path string) func(string) bool {
	if v.Get("minLength") == nil && v.Get("maxLength") == nil && v.Get("pattern") == nil && v.Get("format") == nil {
		return nil
	}
	minL, maxL := c.length(v, path, "minLength"), c.length(v, path, "maxLength")
	a, f := c.stringPattern(v, path)
	return func(s string) bool {
		k := utf8.RuneCountInString(s)
		if k < minL || maxL >= 0 && k > maxL {
			return false
		}
		return a == nil || a.matches(f, s)
	}
}

// literalCheck returns a test of a value against v's keywords that
// assert on one type (literalKeywords), for enum and const values.
func (c *schemaCompiler) literalCheck(v *jsonorder.Value, path string) func(*jsonorder.Value) bool {
	str := c.stringCheck(v, path)
	num := c.numberCheck(v, path)
	minI, maxI := c.length(v, path, "minItems"), c.length(v, path, "maxItems")
	minP, maxP := c.length(v, path, "minProperties"), c.length(v, path, "maxProperties")
	var req []string
	if r := v.Get("required"); r != nil {
		if r.Kind != jsonorder.Array {
			c.fail(path+"/required", "required", "must be an array of strings")
		}
		for _, it := range r.Items {
			if it.Kind != jsonorder.String {
				c.fail(path+"/required", "required", "must be an array of strings")
			}
			req = append(req, it.Str)
		}
	}
	return func(e *jsonorder.Value) bool {
		switch e.Kind {
		case jsonorder.String:
			return str == nil || str(e.Str)
		case jsonorder.Number:
			return num == nil || num(string(e.Number))
		case jsonorder.Array:
			return len(e.Items) >= minI && (maxI < 0 || len(e.Items) <= maxI)
		case jsonorder.Object:
			if len(e.Members) < minP || maxP >= 0 && len(e.Members) > maxP {
				return false
			}
			for _, r := range req {
				if e.Get(r) == nil {
					return false
				}
			}
		}
		return true
	}
}

// numberCheck returns an exact test of a number's spelling against v's
// numeric keywords (bounds, draft 4's boolean exclusive forms too, and
// multipleOf), in rational arithmetic; nil when v has none.
func (c *schemaCompiler) numberCheck(v *jsonorder.Value, path string) func(string) bool {
	type limit struct {
		r             *big.Rat
		lower, strict bool
	}
	var limits []limit
	var mult *big.Rat
	flag := func(kw string) bool {
		x := v.Get(kw)
		return x != nil && x.Kind == jsonorder.Bool && x.Bool
	}
	for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		x := v.Get(kw)
		if x == nil || x.Kind == jsonorder.Bool && strings.HasPrefix(kw, "exclusive") {
			continue
		}
		var r *big.Rat
		ok := false
		if x.Kind == jsonorder.Number {
			r, ok = new(big.Rat).SetString(string(x.Number))
		}
		if !ok {
			c.fail(path+"/"+kw, kw, "must be a number")
			return nil
		}
		switch kw {
		case "minimum":
			limits = append(limits, limit{r, true, flag("exclusiveMinimum")})
		case "maximum":
			limits = append(limits, limit{r, false, flag("exclusiveMaximum")})
		case "exclusiveMinimum":
			limits = append(limits, limit{r, true, true})
		case "exclusiveMaximum":
			limits = append(limits, limit{r, false, true})
		default:
			if r.Sign() <= 0 {
				c.fail(path+"/multipleOf", "multipleOf", "must be greater than 0")
				return nil
			}
			mult = r
		}
	}
	if len(limits) == 0 && mult == nil {
		return nil
	}
	return func(num string) bool {
		x, ok := new(big.Rat).SetString(num)
		if !ok {
			return false
		}
		for _, l := range limits {
			d := x.Cmp(l.r)
			if l.lower && (d < 0 || l.strict && d == 0) || !l.lower && (d > 0 || l.strict && d == 0) {
				return false
			}
		}
		return mult == nil || new(big.Rat).Quo(x, mult).IsInt()
	}
}

// lengthString matches a string of any characters within v's length
// bounds.
func (c *schemaCompiler) lengthString(v *jsonorder.Value, path string) frag {
	n := c.n
	minL, maxL := c.count(v, path, "minLength"), c.count(v, path, "maxLength")
	if minL > maxCount || maxL > maxCount {
		c.unsupported(path, "maxLength", "string lengths above %d are not supported", maxCount)
		if maxL > maxCount {
			maxL = -1
		}
		minL = min(minL, maxCount)
	}
	if minL <= 0 && maxL < 0 {
		return c.freeString()
	}
	if maxL >= 0 && minL > maxL {
		return c.none()
	}
	body := n.repeat(max(minL, 0), maxL, func() frag { return n.jsonCharFrag(allRunes) })
	return n.seq(n.lit(`"`), body, n.lit(`"`))
}

func (c *schemaCompiler) array(v *jsonorder.Value, path string) frag {
	n := c.n
	var prefix []*jsonorder.Value
	var rest *jsonorder.Value // nil: any value
	restPath := path + "/items"
	if p := v.Get("prefixItems"); p != nil {
		if p.Kind != jsonorder.Array {
			c.fail(path+"/prefixItems", "prefixItems", "must be an array of schemas")
			return c.none()
		}
		prefix = p.Items
		rest = v.Get("items")
	} else if it := v.Get("items"); it != nil && it.Kind == jsonorder.Array {
		prefix = it.Items
		rest, restPath = v.Get("additionalItems"), path+"/additionalItems"
	} else {
		rest = it
	}
	if u := v.Get("uniqueItems"); u != nil && u.Kind == jsonorder.Bool && u.Bool {
		c.unsupported(path, "uniqueItems", "uniqueItems true is not supported")
	}
	minI, maxI := max(c.count(v, path, "minItems"), 0), c.count(v, path, "maxItems")
	if maxI >= 0 && minI > maxI {
		return c.none()
	}
	restNone := rest != nil && rest.Kind == jsonorder.Bool && !rest.Bool
	explicit := max(len(prefix), minI)
	if maxI >= 0 {
		explicit = maxI
		if restNone || maxI > len(prefix)+maxCount {
			explicit = min(maxI, len(prefix)+maxCount)
		}
	}
	if explicit > len(prefix)+maxCount {
		c.unsupported(path, "minItems", "item counts above %d are not supported", maxCount)
		explicit = len(prefix) + maxCount
	}
	item := func(j int) (frag, bool) {
		if j < len(prefix) {
			return c.value(prefix[j], fmt.Sprintf("%s/prefixItems/%d", path, j)), true
		}
		if restNone {
			return frag{}, false
		}
		if rest == nil {
			return c.anyValue(), true
		}
		return c.value(rest, restPath), true
	}
	open := n.seq(n.lit("["), c.gap())
	end := n.add()
	cur := open.out
	for j := 0; j <= explicit; j++ {
		if j >= minI {
			cl := n.lit("]")
			n.eps(cur, cl.in)
			n.eps(cl.out, end)
		}
		if j == explicit {
			break
		}
		f, ok := item(j)
		if !ok {
			break
		}
		parts := []frag{}
		if j > 0 {
			parts = append(parts, n.lit(","), c.gap())
		}
		step := n.seq(append(parts, f, c.gap())...)
		n.eps(cur, step.in)
		cur = step.out
	}
	if maxI < 0 && !restNone {
		// Unbounded tail: loop on the rest schema.
		if explicit == 0 {
			f, _ := item(0)
			step := n.seq(f, c.gap())
			n.eps(cur, step.in)
			cur = step.out
			cl := n.lit("]")
			n.eps(cur, cl.in)
			n.eps(cl.out, end)
			explicit = 1
		}
		f, _ := item(explicit)
		loop := n.seq(n.lit(","), c.gap(), f, c.gap())
		n.eps(cur, loop.in)
		n.eps(loop.out, cur)
	}
	return frag{open.in, end}
}

func (c *schemaCompiler) object(v *jsonorder.Value, path string) frag {
	n := c.n
	type prop struct {
		name   string
		schema *jsonorder.Value
		path   string
		req    bool
	}
	var props []prop
	if p := v.Get("properties"); p != nil {
		if p.Kind != jsonorder.Object {
			c.fail(path+"/properties", "properties", "must be an object")
			return c.none()
		}
		for _, m := range p.Members {
			props = append(props, prop{name: m.Name, schema: m.Value, path: path + "/properties/" + escapePointer(m.Name)})
		}
	}
	addl := v.Get("additionalProperties")
	if u := v.Get("unevaluatedProperties"); u != nil {
		if addl == nil && u.Kind == jsonorder.Bool && !u.Bool {
			addl = u
		} else {
			c.unsupported(path, "unevaluatedProperties", "supported only as false, without additionalProperties")
		}
	}
	addlNone := addl != nil && addl.Kind == jsonorder.Bool && !addl.Bool
	if r := v.Get("required"); r != nil {
		if r.Kind != jsonorder.Array {
			c.fail(path+"/required", "required", "must be an array of strings")
			return c.none()
		}
		for _, it := range r.Items {
			if it.Kind != jsonorder.String {
				c.fail(path+"/required", "required", "must be an array of strings")
				return c.none()
			}
			i := slices.IndexFunc(props, func(p prop) bool { return p.name == it.Str })
			if i < 0 {
				if addlNone {
					return c.none() // required but not allowed: no value satisfies it
				}
				s := addl
				if s == nil {
					s = &jsonorder.Value{Kind: jsonorder.Bool, Bool: true}
				}
				props = append(props, prop{name: it.Str, schema: s, path: path + "/additionalProperties"})
				i = len(props) - 1
			}
			props[i].req = true
		}
	}
	nreq := 0
	for _, p := range props {
		if p.req {
			nreq++
		}
	}
	if x := c.count(v, path, "minProperties"); x > nreq {
		c.unsupported(path, "minProperties", "minProperties above the number of required properties is not supported")
	}
	if x := c.count(v, path, "maxProperties"); x >= 0 && (!addlNone || x < len(props)) {
		c.unsupported(path, "maxProperties", "maxProperties is supported only when it allows every listed property and no others")
	}
	// States S[i][e]: before property i, e = whether a member was written.
	// Properties come in the schema's order; each optional one may be
	// skipped; additional members come last.
	open := n.seq(n.lit("{"), c.gap())
	end := n.add()
	s := [2]int32{open.out, n.add()}
	names := make([]string, 0, len(props))
	for _, p := range props {
		names = append(names, p.name)
		next := [2]int32{n.add(), n.add()}
		for e := 0; e < 2; e++ {
			var parts []frag
			if e == 1 {
				parts = append(parts, n.lit(","), c.gap())
			}
			parts = append(parts, n.jsonStringLit(p.name), c.gap(), n.lit(":"), c.gap(), c.value(p.schema, p.path), c.gap())
			m := n.seq(parts...)
			n.eps(s[e], m.in)
			n.eps(m.out, next[1])
			if !p.req {
				n.eps(s[e], next[e])
			}
		}
		s = next
	}
	for e := 0; e < 2; e++ {
		cl := n.lit("}")
		n.eps(s[e], cl.in)
		n.eps(cl.out, end)
	}
	if !addlNone {
		var val frag
		if addl == nil || addl.Kind == jsonorder.Bool {
			val = c.anyValue()
		} else {
			val = c.value(addl, path+"/additionalProperties")
		}
		for e := 0; e < 2; e++ {
			var parts []frag
			if e == 1 {
				parts = append(parts, n.lit(","), c.gap())
			}
			parts = append(parts, c.keyExcept(names), c.gap(), n.lit(":"), c.gap(), val, c.gap())
			m := n.seq(parts...)
			n.eps(s[e], m.in)
			n.eps(m.out, s[1])
			val = c.dup(addl, path, val)
		}
	}
	return frag{open.in, end}
}

// dup returns a fresh call fragment for the additional-properties value.
func (c *schemaCompiler) dup(addl *jsonorder.Value, path string, _ frag) frag {
	if addl == nil || addl.Kind == jsonorder.Bool {
		return c.anyValue()
	}
	return c.value(addl, path+"/additionalProperties")
}

// keyExcept matches a JSON string that is none of names: a trie over the
// names' characters, leaving it for a free string at the first character
// no name continues with.
func (c *schemaCompiler) keyExcept(names []string) frag {
	n := c.n
	open, close := n.lit(`"`), n.lit(`"`)
	free := n.add()
	n.jsonChar(free, free, allRunes)
	n.eps(free, close.in)
	var build func(prefix string, at int32)
	build = func(prefix string, at int32) {
		// One child per next character: the set is normalised only for
		// the free branch, since normalising merges adjacent characters
		// ("s" and "t") into one range, which must not share a child.
		var kids []rune
		done := false
		for _, nm := range names {
			if nm == prefix {
				done = true
			}
			if strings.HasPrefix(nm, prefix) && len(nm) > len(prefix) {
				r := []rune(nm[len(prefix):])[0]
				if !slices.Contains(kids, r) {
					kids = append(kids, r)
				}
			}
		}
		if !done {
			n.eps(at, close.in)
		}
		var set runeSet
		for _, r := range kids {
			set = append(set, [2]rune{r, r})
		}
		n.jsonChar(at, free, allRunes.minus(set.normalize()))
		for _, r := range kids {
			child := n.add()
			n.jsonChar(at, child, runeSet{{r, r}})
			build(prefix+string(r), child)
		}
	}
	root := n.add()
	n.eps(open.out, root)
	build("", root)
	return frag{open.in, close.out}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

var errEmpty = errors.New("no JSON value satisfies the schema")
