package grammar

import (
	"encoding/json"
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
	exceptKeyword: true, patternsKeyword: true,
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
	exceptKeyword: true, patternsKeyword: true,
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
	proofOnly bool
	// refAlone: the schema declares a draft up to 7, where a $ref's
	// sibling keywords are ignored (refBesideIgnored).
	refAlone bool
	// listedDepth counts the listed-value checks this compiler is inside
	// (listed.go).
	listedDepth int
	warnings    []Warning
	subs        map[*jsonorder.Value]int32
	merged      map[string]*jsonorder.Value
	prints      map[*jsonorder.Value]uint64
	anySub      int32
	gapSub      int32
	err         error
}

func newSchemaCompiler(root *jsonorder.Value, o Options) *schemaCompiler {
	c := &schemaCompiler{n: &nfa{}, root: root, strict: o.Strict, param: o.param(), proofOnly: o.proofOnly, suffix: o.Suffix, after: o.After, afterOpen: o.AfterOpen,
		subs: map[*jsonorder.Value]int32{}, merged: map[string]*jsonorder.Value{}, prints: map[*jsonorder.Value]uint64{}, anySub: -1, gapSub: -1}
	c.refAlone = refBesideIgnored(root)
	return c
}

// refBesideIgnored reports whether the schema's $schema names a draft up
// to 7 (draft-03, -04, -06, -07), in which "all other properties in a
// $ref object MUST be ignored": validators of those drafts accept an
// instance the siblings reject, so enforcing them would refuse valid
// values. Without $schema, or for 2019-09 and later, siblings apply.
func refBesideIgnored(root *jsonorder.Value) bool {
	if root == nil || root.Kind != jsonorder.Object {
		return false
	}
	s := root.Get("$schema")
	if s == nil || s.Kind != jsonorder.String {
		return false
	}
	for _, d := range []string{"draft-03", "draft-04", "draft-06", "draft-07"} {
		if strings.Contains(s.Str, d) {
			return true
		}
	}
	return false
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
		if assertions > 1 && !c.refAlone {
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
	if w, ok := c.rewrite(v, path); ok {
		if c.err != nil {
			return c.none()
		}
		return c.value(w, path)
	}
	listed := v.Get("enum") != nil || v.Get("const") != nil
	step := integerStep(v.Get("multipleOf"))
	for _, kw := range []string{"propertyNames", "multipleOf",
		"unevaluatedItems", "$dynamicRef", "$recursiveRef"} {
		// multipleOf is decided for each listed value of an enum or const,
		// and enforced for integer steps (multiple.go).
		if v.Get(kw) != nil && !(kw == "multipleOf" && (listed || step > 0)) {
			msg := "not supported in constrained decoding"
			if kw == "multipleOf" {
				msg = fmt.Sprintf("supported for integer steps up to %d only", maxStep)
			}
			c.unsupported(path, kw, "%s", msg)
		}
	}
	types, ok := c.types(v, path)
	if !ok {
		return c.none()
	}
	if step > 0 && !listed {
		types = integerTypes(types)
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
		if m.Name != kw && vocabulary[m.Name] {
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
		if ex, ok := c.exclusive(branches); ok && !c.proofOnly {
			branches = ex
		} else {
			c.unsupported(path, "oneOf", "branches that may overlap are enforced as anyOf (a value matching two of them is not excluded)")
		}
	}
	if kw == "allOf" {
		acc := siblings
		accPath := path
		for i, b := range branches {
			m, ok := c.merge(acc, b, path, kw)
			if !ok || m.Kind == jsonorder.Bool && !m.Bool {
				return c.none() // a branch no value matches
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
	key = fmt.Sprintf("%s#%x", key, c.fingerprint(v))
	if m, ok := c.merged[key]; ok {
		return m
	}
	c.merged[key] = v
	return v
}

// merge returns siblings ∧ branch as one schema, when that is exact.
func (c *schemaCompiler) merge(siblings []jsonorder.Member, b *jsonorder.Value, path, kw string) (*jsonorder.Value, bool) {
	// A branch that is a $ref alone (or beside keywords its draft
	// ignores) is its target.
	for hops := 0; b.Kind == jsonorder.Object && b.Get("$ref") != nil && (len(b.Members) == 1 || c.refAlone); hops++ {
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
	var bms []jsonorder.Member
	for _, m := range b.Members {
		if vocabulary[m.Name] {
			bms = append(bms, m)
		}
	}
	// Conditional keywords on both sides are rewritten into allOf first,
	// which merges by joining the lists.
	if conditionalOn(siblings) && conditionalOn(bms) {
		if w, ok := c.rewrite(object(bms...), path); ok {
			bms = w.Members
		}
		if c.err != nil {
			return nil, false
		}
	}
	out, rest, ok := mergeObjects(siblings, bms)
	if !ok {
		c.unsupported(path, kw, "additionalProperties combined with properties from another branch cannot be enforced beside patternProperties or unevaluatedProperties")
		if c.err != nil {
			return nil, false
		}
	}
	has := map[string]bool{}
	for _, m := range out {
		has[m.Name] = true
	}
	for _, m := range rest {
		if !has[m.Name] {
			out = append(out, m)
			has[m.Name] = true
			continue
		}
		i := slices.IndexFunc(out, func(o jsonorder.Member) bool { return o.Name == m.Name })
		if x, ok := conjoin(m.Name, out[i].Value, m.Value, out, rest); ok {
			out[i].Value = x
			continue
		}
		if x, ok := distribute(m.Name, out[i].Value, m.Value); ok {
			out[i].Value = x
			continue
		}
		if m.Name == "const" {
			// Two consts not surely equal: no value is both, but for
			// spellings of one value that compare apart here (1, 1.0),
			// which are dropped.
			return &jsonorder.Value{Kind: jsonorder.Bool}, true
		}
		if m.Name == "pattern" && m.Value.Kind == jsonorder.String {
			// Both patterns hold: the second joins the list of further
			// patterns, which stringPattern intersects.
			if j := slices.IndexFunc(out, func(o jsonorder.Member) bool { return o.Name == patternsKeyword }); j >= 0 {
				out[j].Value = array(append(slices.Clone(out[j].Value.Items), m.Value)...)
			} else {
				out = append(out, member(patternsKeyword, array(m.Value)))
			}
			continue
		}
		c.unsupported(path, kw, "keyword %q both beside %s and inside it cannot be combined", m.Name, kw)
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
	case "enum":
		if x.Kind != jsonorder.Array || y.Kind != jsonorder.Array {
			return nil, false
		}
		return array(slices.DeleteFunc(slices.Clone(x.Items), func(e *jsonorder.Value) bool {
			return !slices.ContainsFunc(y.Items, func(f *jsonorder.Value) bool { return surelyEqual(e, f) })
		})...), true
	case "const":
		return x, surelyEqual(x, y)
	case "items":
		// Both as one schema for every item, when neither side has a
		// prefix the items would be counted from.
		for _, ms := range [][]jsonorder.Member{a, b} {
			for _, m := range ms {
				if m.Name == "prefixItems" || m.Name == "additionalItems" {
					return nil, false
				}
			}
		}
		if x.Kind == jsonorder.Array || y.Kind == jsonorder.Array {
			return nil, false
		}
		return allOf(x, y), true
	case "multipleOf":
		// Both integer steps: their least common multiple.
		p, q := integerStep(x), integerStep(y)
		if p == 0 || q == 0 {
			return nil, false
		}
		l := new(big.Int).Mul(big.NewInt(p/gcd(p, q)), big.NewInt(q))
		return &jsonorder.Value{Kind: jsonorder.Number, Number: json.Number(l.String())}, true
	case "required", exceptKeyword, patternsKeyword:
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
	// Keywords beyond the value-by-value checks below: each listed value
	// against a grammar of them (listed.go).
	other := c.listedFilter(v, path, kw)
	if c.err != nil {
		return c.none()
	}
	// The keywords that assert on one type hold or not for each listed
	// value of that type, decided here.
	check := c.literalCheck(v, path)
	if c.err != nil {
		return c.none()
	}
	if k := v.Get("const"); k != nil && kw == "enum" {
		// Both: the listed values surely equal to the const.
		values = slices.DeleteFunc(slices.Clone(values), func(e *jsonorder.Value) bool { return !surelyEqual(e, k) })
	}
	var alts []frag
	for _, e := range values {
		if !typeAllows(types, e) || !check(e) || other != nil && !other(e) {
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
	if x := v.Get(patternsKeyword); x != nil && x.Kind == jsonorder.Array {
		for _, it := range x.Items {
			pa, pf, err := c.pattern(it.Str, false)
			if err != nil {
				c.unsupported(path+"/pattern", "pattern", "%v", err)
				continue
			}
			if a == nil {
				a, f = pa, pf
			} else if p, pf2, ok := intersect(a, f, pa, pf); ok {
				a, f = p, pf2
			} else {
				c.unsupported(path+"/pattern", "pattern", "two patterns together need an automaton over the size limit (%d)", maxProduct)
			}
		}
	}
	if x := v.Get(exceptKeyword); x != nil {
		ea, ef := exceptStrings(x)
		if a == nil {
			a, f = ea, ef
		} else if p, pf, ok := intersect(a, f, ea, ef); ok {
			a, f = p, pf
		} else {
			c.unsupported(path, "not", "a pattern without the listed strings needs an automaton over the size limit (%d)", maxProduct)
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
	if v.Get("minLength") == nil && v.Get("maxLength") == nil && v.Get("pattern") == nil && v.Get("format") == nil && v.Get(exceptKeyword) == nil && v.Get(patternsKeyword) == nil {
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
	minL, maxL := c.length(v, path, "minLength"), c.length(v, path, "maxLength")
	if minL <= 0 && maxL < 0 {
		return c.freeString()
	}
	if maxL >= 0 && minL > maxL {
		return c.none()
	}
	if minL > lazyLength || maxL > lazyLength {
		return c.countedString(minL, maxL)
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
	minI, maxI := max(c.count(v, path, "minItems"), 0), c.count(v, path, "maxItems")
	if u := v.Get("uniqueItems"); u != nil && u.Kind == jsonorder.Bool && u.Bool && (maxI < 0 || maxI > 1) {
		// At most one item is unique by itself.
		c.unsupported(path, "uniqueItems", "uniqueItems true is supported only with maxItems up to 1")
	}
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
	// contains: a second chain of states, entered by an item that also
	// matches the contains schema; the array closes only on it.
	contains := v.Get("contains")
	if contains != nil && (v.Get("minContains") != nil || v.Get("maxContains") != nil) {
		c.unsupported(path, "minContains", "contains is supported with its default count (at least one) only")
		contains = nil
	}
	itemC := func(j int) (frag, bool) {
		base := &jsonorder.Value{Kind: jsonorder.Bool, Bool: true}
		switch {
		case j < len(prefix):
			base = prefix[j]
		case restNone:
			return frag{}, false
		case rest != nil:
			base = rest
		}
		both := c.intern(fmt.Sprintf("%s/contains/%d", path, min(j, len(prefix))), allOf(base, contains))
		return c.value(both, path+"/contains"), true
	}
	open := n.seq(n.lit("["), c.gap())
	end := n.add()
	// step adds item j (an item fragment, after a comma unless first)
	// from state x to state y.
	step := func(x, y int32, j int, f frag) {
		parts := []frag{}
		if j > 0 {
			parts = append(parts, n.lit(","), c.gap())
		}
		st := n.seq(append(parts, f, c.gap())...)
		n.eps(x, st.in)
		n.eps(st.out, y)
	}
	closeAt := func(x int32) {
		cl := n.lit("]")
		n.eps(x, cl.in)
		n.eps(cl.out, end)
	}
	// found[j]: j items written, one of them matching contains (without
	// contains, every state is found); wait[j]: none of them yet.
	found, wait := n.add(), int32(-1)
	if contains == nil {
		n.eps(open.out, found)
	} else {
		wait = n.add()
		n.eps(open.out, wait)
	}
	for j := 0; j <= explicit; j++ {
		if j >= minI {
			closeAt(found)
		}
		if j == explicit {
			break
		}
		f, ok := item(j)
		if !ok {
			break
		}
		nf := n.add()
		step(found, nf, j, f)
		if wait >= 0 {
			nw := n.add()
			step(wait, nw, j, func() frag { f, _ := item(j); return f }())
			if g, ok := itemC(j); ok {
				step(wait, nf, j, g)
			}
			wait = nw
		}
		found = nf
	}
	if maxI < 0 && !restNone {
		// Unbounded tail: loop on the rest schema.
		j := max(explicit, 1)
		if explicit == 0 {
			// The first item of an empty prefix has no comma before it.
			f, _ := item(0)
			nf := n.add()
			step(found, nf, 0, f)
			if wait >= 0 {
				nw := n.add()
				g, _ := item(0)
				step(wait, nw, 0, g)
				if h, ok := itemC(0); ok {
					step(wait, nf, 0, h)
				}
				wait = nw
			}
			found = nf
			closeAt(found)
		}
		f, _ := item(j)
		step(found, found, j, f)
		if wait >= 0 {
			g, _ := item(j)
			step(wait, wait, j, g)
			if h, ok := itemC(j); ok {
				step(wait, found, j, h)
			}
		}
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
	pats := c.patternProps(v, path)
	if c.err != nil {
		return c.none()
	}
	for i := range props {
		if m := pats.matching(props[i].name); len(m) > 0 {
			props[i].schema = allOf(append([]*jsonorder.Value{props[i].schema}, m...)...)
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
			if m := pats.matching(it.Str); i < 0 && len(m) > 0 {
				props = append(props, prop{name: it.Str, schema: allOf(m...), path: path + "/patternProperties"})
				i = len(props) - 1
			}
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
	minP, maxP := c.length(v, path, "minProperties"), c.length(v, path, "maxProperties")
	if c.err != nil {
		return c.none()
	}
	names := make([]string, len(props))
	for i, p := range props {
		names[i] = p.name
	}
	extras := c.extraClasses(names, pats, addl, path)
	if c.err != nil {
		return c.none()
	}
	if maxP >= 0 && len(extras) == 0 && maxP >= len(props) {
		maxP = -1 // every member allowed fits
	}
	if minP <= nreq {
		minP = 0 // the required members reach it
	}
	if maxP >= 0 && minP > maxP {
		return c.none()
	}
	// Extra members may repeat a name, which a validator reads as one
	// member: toward minProperties they count as one at most.
	if reach := len(props) + min(len(extras), 1); minP > reach {
		c.unsupported(path, "minProperties", "minProperties above the listed properties and one extra member: the grammar cannot keep extra names apart")
		if c.err != nil {
			return c.none()
		}
		minP = 0
	}
	// Members come in any order (members.go): each is a sub-network,
	// with and without the comma before it.
	member := func(comma bool, key func() frag, val func() frag) int32 {
		var parts []frag
		if comma {
			parts = append(parts, n.lit(","), c.gap())
		}
		e := n.add()
		c.finishSub(e, n.seq(append(parts, key(), c.gap(), n.lit(":"), c.gap(), val(), c.gap())...))
		return e
	}
	o := memberSet{minP: minP, maxP: maxP, end: n.add()}
	for _, p := range props {
		key := func() frag { return n.jsonStringLit(p.name) }
		val := func() frag { return c.value(p.schema, p.path) }
		o.first = append(o.first, member(false, key, val))
		o.comma = append(o.comma, member(true, key, val))
		o.req = append(o.req, p.req)
	}
	for _, x := range extras {
		key := func() frag { return n.call(x.key) }
		val := func() frag {
			if x.value == nil {
				return c.anyValue()
			}
			return c.value(x.value, x.path)
		}
		o.xFirst = append(o.xFirst, member(false, key, val))
		o.xComma = append(o.xComma, member(true, key, val))
	}
	if c.err != nil {
		return c.none()
	}
	open := n.seq(n.lit("{"), c.gap())
	n.eps(open.out, c.members(o))
	return frag{open.in, o.end}
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
		n.st[at].anyPlain = true // every character goes on: to a child or to free
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
