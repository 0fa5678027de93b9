package grammar

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/prism-local/prism/internal/jsonorder"
)

// The grammar enforces oneOf as anyOf, which is exact only when no value
// can match two branches. The proof below claims that only from facts each
// branch implies for every value it accepts; a keyword it does not read
// only narrows a branch further, so ignoring one never makes the claim
// wrong. When unsure it answers "may overlap" and the caller refuses.

// Value classes: the JSON types, with numbers split into integral and
// fractional values so that "integer" and "number" compare exactly.
const (
	clNull uint8 = 1 << iota
	clBool
	clObject
	clArray
	clString
	clInt
	clFrac
	clAll = clNull | clBool | clObject | clArray | clString | clInt | clFrac
)

// Bounds on the proof's work: past them it answers "may overlap".
const (
	disjointDepth  = 12   // nesting of property schemas and alternatives
	disjointBudget = 4096 // schemas looked at per oneOf
	refHops        = 32   // $ref chain length
	numberDigits   = 400  // longest number literal compared exactly
)

type disjointProof struct {
	c      *schemaCompiler
	budget int
}

// disjoint reports whether no JSON value matching the keywords beside
// oneOf (siblings) can match two of the branches.
func (c *schemaCompiler) disjoint(branches []*jsonorder.Value, siblings []jsonorder.Member) bool {
	p := &disjointProof{c: c, budget: disjointBudget}
	beside := &jsonorder.Value{Kind: jsonorder.Object, Members: siblings}
	with := func(b *jsonorder.Value) *jsonorder.Value {
		return &jsonorder.Value{Kind: jsonorder.Object, Members: []jsonorder.Member{
			{Name: "allOf", Value: &jsonorder.Value{Kind: jsonorder.Array, Items: []*jsonorder.Value{b, beside}}}}}
	}
	for i := range branches {
		for j := i + 1; j < len(branches); j++ {
			if !p.apart(with(branches[i]), with(branches[j]), 0) {
				return false
			}
		}
	}
	return true
}

// conjuncts lists schemas that every value matching s matches: s itself
// (without its combinators), the targets of its $ref, and its allOf
// members, flattened. A $ref's siblings are left out, since drafts up to 7
// ignore them. alts collects anyOf/oneOf lists: a value matching s matches
// at least one member of each. ok is false when a reference cannot be
// followed.
func (p *disjointProof) conjuncts(s *jsonorder.Value, out []*jsonorder.Value, alts [][]*jsonorder.Value, hops int) ([]*jsonorder.Value, [][]*jsonorder.Value, bool) {
	p.budget--
	if p.budget < 0 || hops > refHops {
		return nil, nil, false
	}
	if s.Kind != jsonorder.Object {
		return append(out, s), alts, true
	}
	if r := s.Get("$ref"); r != nil {
		if r.Kind != jsonorder.String || !strings.HasPrefix(r.Str, "#") {
			return nil, nil, false
		}
		t := p.pointer(r.Str)
		if t == nil {
			return nil, nil, false
		}
		return p.conjuncts(t, out, alts, hops+1)
	}
	out = append(out, s)
	if a := s.Get("allOf"); a != nil {
		if a.Kind != jsonorder.Array {
			return nil, nil, false
		}
		for _, m := range a.Items {
			var ok bool
			if out, alts, ok = p.conjuncts(m, out, alts, hops); !ok {
				return nil, nil, false
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if a := s.Get(kw); a != nil && a.Kind == jsonorder.Array && len(a.Items) > 0 {
			alts = append(alts, a.Items)
		}
	}
	return out, alts, true
}

// pointer follows a reference the way the compiler does, without
// reporting errors (the compiler reports them when it reaches the branch).
func (p *disjointProof) pointer(ref string) *jsonorder.Value {
	saved := p.c.err
	savedWarnings := len(p.c.warnings)
	t, _ := p.c.resolve(&jsonorder.Value{Kind: jsonorder.String, Str: ref}, "")
	p.c.err = saved
	p.c.warnings = p.c.warnings[:savedWarnings]
	return t
}

// apart reports whether no value matches both a and b.
func (p *disjointProof) apart(a, b *jsonorder.Value, depth int) bool {
	if depth > disjointDepth {
		return false
	}
	ca, altsA, okA := p.conjuncts(a, nil, nil, 0)
	cb, altsB, okB := p.conjuncts(b, nil, nil, 0)
	if !okA || !okB {
		return false
	}
	if empty(ca) || empty(cb) {
		return true
	}
	ta, tb := classesOf(ca), classesOf(cb)
	for _, cl := range []uint8{clNull, clBool, clObject, clArray, clString, clInt, clFrac} {
		if ta&tb&cl == 0 {
			continue
		}
		if excludesValues(ca, cb, cl) || excludesValues(cb, ca, cl) {
			continue
		}
		if cl == clObject && p.propertyApart(ca, cb, depth) {
			continue
		}
		return p.altsApart(altsA, b, depth) || p.altsApart(altsB, a, depth)
	}
	return true
}

// altsApart reports whether, for one of the alternative lists, every
// alternative is apart from other.
func (p *disjointProof) altsApart(alts [][]*jsonorder.Value, other *jsonorder.Value, depth int) bool {
	for _, list := range alts {
		if !slices.ContainsFunc(list, func(alt *jsonorder.Value) bool { return !p.apart(alt, other, depth+1) }) {
			return true
		}
	}
	return false
}

// empty reports whether one of the conjuncts is the schema false.
func empty(cs []*jsonorder.Value) bool {
	return slices.ContainsFunc(cs, func(s *jsonorder.Value) bool { return s.Kind == jsonorder.Bool && !s.Bool })
}

// classesOf returns the value classes every conjunct allows, by type and
// by listed values.
func classesOf(cs []*jsonorder.Value) uint8 {
	out := clAll
	for _, s := range cs {
		if s.Kind != jsonorder.Object {
			continue
		}
		if t := s.Get("type"); t != nil {
			if names := typeNames(t); names != nil {
				var m uint8
				for _, n := range names {
					m |= typeClasses(n)
				}
				out &= m
			}
		}
		if vals, ok := listed(s); ok {
			var m uint8
			for _, v := range vals {
				m |= valueClasses(v)
			}
			out &= m
		}
	}
	return out
}

func typeClasses(name string) uint8 {
	switch name {
	case "null":
		return clNull
	case "boolean":
		return clBool
	case "object":
		return clObject
	case "array":
		return clArray
	case "string":
		return clString
	case "integer":
		return clInt
	case "number":
		return clInt | clFrac
	}
	return clAll
}

// valueClasses returns the classes a literal may belong to. A number is
// classed both exactly and as the nearest float64, which is how many
// validators read it (1.0000000000000000001 is then integral); one too
// long to decide counts as both integral and fractional.
func valueClasses(v *jsonorder.Value) uint8 {
	switch v.Kind {
	case jsonorder.Null:
		return clNull
	case jsonorder.Bool:
		return clBool
	case jsonorder.Object:
		return clObject
	case jsonorder.Array:
		return clArray
	case jsonorder.String:
		return clString
	case jsonorder.Number:
		r := exactNumber(v)
		f, err := strconv.ParseFloat(string(v.Number), 64)
		if r == nil || err != nil {
			return clInt | clFrac
		}
		var m uint8
		if r.IsInt() || f == math.Trunc(f) {
			m |= clInt
		}
		if !r.IsInt() || f != math.Trunc(f) {
			m |= clFrac
		}
		return m
	}
	return clAll
}

// exactNumber parses a number literal exactly; nil when it is too long or
// its exponent too large to compare cheaply.
func exactNumber(v *jsonorder.Value) *big.Rat {
	s := string(v.Number)
	if len(s) > numberDigits {
		return nil
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e := strings.TrimLeft(s[i+1:], "+-")
		if len(e) > 3 {
			return nil
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}

// listed returns the values a schema's const or enum allows.
func listed(s *jsonorder.Value) ([]*jsonorder.Value, bool) {
	if k := s.Get("const"); k != nil {
		return []*jsonorder.Value{k}, true
	}
	if e := s.Get("enum"); e != nil && e.Kind == jsonorder.Array {
		return e.Items, true
	}
	return nil, false
}

// excludesValues reports whether some conjunct of a lists values and each
// of them in class cl is rejected by some conjunct of b.
func excludesValues(a, b []*jsonorder.Value, cl uint8) bool {
	for _, s := range a {
		if s.Kind != jsonorder.Object {
			continue
		}
		vals, ok := listed(s)
		if !ok {
			continue
		}
		all := true
		for _, v := range vals {
			if valueClasses(v)&cl != 0 && !slices.ContainsFunc(b, func(t *jsonorder.Value) bool { return rejects(t, v) }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// rejects reports whether schema s is sure to reject the literal v, by its
// type or by its own listed values.
func rejects(s *jsonorder.Value, v *jsonorder.Value) bool {
	if s.Kind != jsonorder.Object {
		return s.Kind == jsonorder.Bool && !s.Bool
	}
	if t := s.Get("type"); t != nil {
		if names := typeNames(t); names != nil {
			var m uint8
			for _, n := range names {
				m |= typeClasses(n)
			}
			if valueClasses(v)&m == 0 {
				return true
			}
		}
	}
	if k := s.Get("const"); k != nil && !mayEqual(k, v) {
		return true
	}
	if e := s.Get("enum"); e != nil && e.Kind == jsonorder.Array &&
		!slices.ContainsFunc(e.Items, func(x *jsonorder.Value) bool { return mayEqual(x, v) }) {
		return true
	}
	return false
}

// mayEqual reports whether two literals may be the same JSON value; it is
// false only when they surely differ. Numbers compare as numbers (1 and
// 1.0 are equal), exactly and as float64 (numbers that differ only past
// float64's precision may be equal to a validator), objects by members
// regardless of order.
func mayEqual(x, y *jsonorder.Value) bool {
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
		fx, errx := strconv.ParseFloat(string(x.Number), 64)
		fy, erry := strconv.ParseFloat(string(y.Number), 64)
		if rx == nil || ry == nil || errx != nil || erry != nil {
			return true
		}
		return rx.Cmp(ry) == 0 || fx == fy
	case jsonorder.Array:
		if len(x.Items) != len(y.Items) {
			return false
		}
		for i := range x.Items {
			if !mayEqual(x.Items[i], y.Items[i]) {
				return false
			}
		}
		return true
	case jsonorder.Object:
		if hasDuplicateNames(x) || hasDuplicateNames(y) {
			return true
		}
		if len(x.Members) != len(y.Members) {
			return false
		}
		for _, m := range x.Members {
			o := y.Get(m.Name)
			if o == nil || !mayEqual(m.Value, o) {
				return false
			}
		}
		return true
	}
	return true
}

func hasDuplicateNames(v *jsonorder.Value) bool {
	seen := make(map[string]bool, len(v.Members))
	for _, m := range v.Members {
		if seen[m.Name] {
			return true
		}
		seen[m.Name] = true
	}
	return false
}

// propertyApart reports whether no object matches both: some property is
// required by a conjunct of either side, so every object matching that
// side has it, and what one side allows for it is apart from what the
// other allows.
func (p *disjointProof) propertyApart(ca, cb []*jsonorder.Value, depth int) bool {
	var names []string
	for _, s := range append(slices.Clone(ca), cb...) {
		if s.Kind != jsonorder.Object {
			continue
		}
		if r := s.Get("required"); r != nil && r.Kind == jsonorder.Array {
			for _, it := range r.Items {
				if it.Kind == jsonorder.String && !slices.Contains(names, it.Str) {
					names = append(names, it.Str)
				}
			}
		}
	}
	for _, name := range names {
		for _, x := range ca {
			vx := memberSchema(x, name)
			if vx == nil {
				continue
			}
			for _, y := range cb {
				if vy := memberSchema(y, name); vy != nil && p.apart(vx, vy, depth+1) {
					return true
				}
			}
		}
	}
	return false
}

// memberSchema returns a schema the value of member name must match in
// any object s accepts; nil when s says nothing about it.
func memberSchema(s *jsonorder.Value, name string) *jsonorder.Value {
	if s.Kind != jsonorder.Object {
		return nil
	}
	if props := s.Get("properties"); props != nil {
		if props.Kind != jsonorder.Object || hasDuplicateNames(props) {
			return nil
		}
		if v := props.Get(name); v != nil {
			return v
		}
	}
	// Any pattern might match the name; unevaluatedProperties depends on
	// what other keywords evaluated.
	if s.Get("patternProperties") != nil {
		return nil
	}
	return s.Get("additionalProperties")
}
