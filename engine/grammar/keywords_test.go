package grammar_test

import (
	"errors"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
)

// accepts reports whether g allows text whole and may end after it.
func accepts(g *grammar.Grammar, text string) bool {
	m := g.Start()
	return m.AdvanceBytes([]byte(text)) && m.CanEnd()
}

// Schemas from MaskBench-shaped cases that a strict compile refused though
// it can enforce them exactly, and the keywords it must still refuse.
func TestKeywordsBesideEnumAndAllOf(t *testing.T) {
	v := byteVocab()
	for _, tc := range []struct {
		name, schema   string
		accept, refuse []string
		refusedKeyword string // non-empty: the strict compile fails naming it
	}{
		{
			// "readonly" (not readOnly) is no JSON Schema keyword: ignored,
			// as it is beside any other keyword.
			name:   "unknown keyword beside enum",
			schema: `{"type":"string","enum":["on","off"],"readonly":true,"x-vendor":{"a":1}}`,
			accept: []string{`"on"`, `"off"`},
			refuse: []string{`"other"`, `true`, `1`},
		},
		{
			name:   "unknown keyword beside const",
			schema: `{"const":3,"pbj":"x"}`,
			accept: []string{`3`},
			refuse: []string{`4`, `"3"`},
		},
		{
			// Any other assertion beside enum filters the values too,
			// through a grammar of its own (TestListedBesideKeywords).
			name:   "items beside enum",
			schema: `{"enum":[[1],["a"]],"items":{"type":"integer"}}`,
			accept: []string{`[1]`},
			refuse: []string{`["a"]`, `[]`},
		},
		{
			// Both branches say "object": the conjunction says it once.
			name: "allOf of references with the same type",
			schema: `{"definitions":{"A":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},` +
				`"B":{"type":"object"}},"allOf":[{"$ref":"#/definitions/A"},{"$ref":"#/definitions/B"}]}`,
			accept: []string{`{"a": 1}`},
			refuse: []string{`{}`, `[]`, `{"a": "x"}`, `1`},
		},
		{
			name:   "$ref beside the type it resolves to",
			schema: `{"$ref":"#/definitions/A","type":"object","definitions":{"A":{"type":"object","required":["a"]}}}`,
			accept: []string{`{"a": null}`},
			refuse: []string{`{}`, `null`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
			if tc.refusedKeyword != "" {
				var se *grammar.SchemaError
				if !errors.As(err, &se) || se.Keyword != tc.refusedKeyword {
					t.Fatalf("compile: got %v, want a SchemaError naming %q", err, tc.refusedKeyword)
				}
				return
			}
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			for _, s := range tc.accept {
				if !accepts(g, s) {
					t.Errorf("refuses %s", s)
				}
			}
			for _, s := range tc.refuse {
				if accepts(g, s) {
					t.Errorf("accepts %s", s)
				}
			}
		})
	}
}

// Extra members may not reuse a listed name, whatever the listed names'
// first characters: "s" and "t" are adjacent, and the name trie once gave
// them one branch, so "token" passed as an extra member with any value and
// "t", a valid extra member, was refused.
func TestExtraMembersBesideAdjacentNames(t *testing.T) {
	v := byteVocab()
	for _, tc := range []struct {
		schema         string
		accept, refuse []string
	}{
		{
			schema: `{"type":"object","properties":{"s":{"type":"integer"},"token":{"type":"integer"}}}`,
			accept: []string{`{"token": 1}`, `{"s": 1, "token": 2}`, `{"t": "x"}`, `{"tok": "x"}`, `{"tokens": "x"}`, `{"sa": "x"}`},
			refuse: []string{`{"token": "x"}`, `{"s": "x"}`, `{"s": 1, "token": "x"}`, `{"token": 1, "token": 2}`},
		},
		{
			schema: `{"type":"object","properties":{"ab":{"type":"null"},"ac":{"type":"null"},"b":{"type":"null"}}}`,
			accept: []string{`{"ab": null, "ac": null}`, `{"a": 1}`, `{"ad": 1}`, `{"abc": 1}`, `{"ba": 1}`},
			refuse: []string{`{"ac": 1}`, `{"ab": 1}`, `{"b": 1}`, `{"b": null, "ac": 1}`},
		},
	} {
		g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		for _, s := range tc.accept {
			if !accepts(g, s) {
				t.Errorf("%s refuses %s", tc.schema, s)
			}
		}
		for _, s := range tc.refuse {
			if accepts(g, s) {
				t.Errorf("%s accepts %s", tc.schema, s)
			}
		}
	}
}

// Bounds on integers are read exactly from their spelling, past 1e15 and
// past 64 bits (Snowplow's "maximum": 9223372036854776000).
func TestIntegerBoundsBeyond1e15(t *testing.T) {
	v := byteVocab()
	for _, tc := range []struct {
		schema         string
		accept, refuse []string
		refused        bool
	}{
		{
			schema: `{"type":"integer","minimum":0,"maximum":9223372036854776000}`,
			accept: []string{`0`, `1000000000000000000`, `9223372036854775807`},
			// Beyond 64 bits: valid, but refused (the bound is clamped).
			refuse: []string{`-1`, `9223372036854775808`, `1.5`},
		},
		{
			schema: `{"type":"integer","minimum":9007199254740993,"exclusiveMaximum":9007199254740995}`,
			accept: []string{`9007199254740993`, `9007199254740994`},
			refuse: []string{`9007199254740992`, `9007199254740995`},
		},
		{
			schema: `{"type":"integer","minimum":-1e16,"maximum":2.5e1}`,
			accept: []string{`-10000000000000000`, `25`, `0`},
			refuse: []string{`-10000000000000001`, `26`},
		},
		{
			schema: `{"type":"integer","exclusiveMinimum":-2.5,"maximum":-1}`,
			accept: []string{`-2`, `-1`},
			refuse: []string{`-3`, `0`},
		},
		// A lower bound above 64 bits would have to be widened: refused.
		{schema: `{"type":"integer","minimum":1e19}`, refused: true},
		{schema: `{"type":"integer","maximum":-1e19}`, refused: true},
		{schema: `{"type":"integer","maximum":1e500}`, refused: true},
		// Numbers keep the 1e15 limit.
		{schema: `{"type":"number","maximum":1e16}`, refused: true},
	} {
		g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
		if tc.refused {
			var se *grammar.SchemaError
			if !errors.As(err, &se) {
				t.Errorf("%s: got %v, want a SchemaError", tc.schema, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		for _, s := range tc.accept {
			if !accepts(g, s) {
				t.Errorf("%s refuses %s", tc.schema, s)
			}
		}
		for _, s := range tc.refuse {
			if accepts(g, s) {
				t.Errorf("%s accepts %s", tc.schema, s)
			}
		}
	}
}
