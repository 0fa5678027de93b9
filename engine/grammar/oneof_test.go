package grammar_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
)

// oneOfCases are oneOf schemas whose branches no value can match twice,
// with instances labelled by JSON Schema's oneOf (valid: exactly one
// branch; invalid: none, or what an instance would need to match two).
var oneOfCases = []struct {
	name           string
	schema         string
	valid, invalid []string
}{
	{"discriminator_const",
		`{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"]},` +
			`{"type":"object","properties":{"kind":{"const":"b"},"x":{"type":"string"}},"required":["kind"]}]}`,
		[]string{`{"kind": "a", "x": 1}`, `{"kind": "b", "x": "s"}`, `{"kind": "b"}`},
		[]string{`{"kind": "c"}`, `{"x": 1}`, `{"kind": "a", "x": "s"}`, `{}`, `"a"`}},
	{"discriminator_enum_sets",
		`{"oneOf":[{"type":"object","properties":{"op":{"enum":["add","sub"]}},"required":["op"]},` +
			`{"type":"object","properties":{"op":{"enum":["mul",2]}},"required":["op"]},` +
			`{"type":"object","properties":{"op":{"enum":[2.5,null]}},"required":["op"]}]}`,
		[]string{`{"op": "add"}`, `{"op": "mul"}`, `{"op": 2}`, `{"op": 2.5}`, `{"op": null}`},
		[]string{`{"op": "div"}`, `{"op": 3}`, `{}`}},
	{"discriminator_required_in_one_branch",
		// An object without "t" can match only the second branch; one
		// with "t" can match only the branch its value allows.
		`{"oneOf":[{"type":"object","properties":{"t":{"const":1}},"required":["t"]},` +
			`{"type":"object","properties":{"t":{"const":2}}}]}`,
		[]string{`{"t": 1}`, `{"t": 2}`, `{}`, `{"u": 1}`},
		[]string{`{"t": 3}`, `[]`}},
	{"required_forbidden_elsewhere",
		`{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},` +
			`{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":false}]}`,
		[]string{`{"a": "x"}`, `{"a": "x", "b": "y"}`, `{"b": "y"}`, `{}`},
		[]string{`{"a": 1}`, `{"c": 1}`}},
	{"types_by_ref_and_lists",
		`{"$defs":{"obj":{"type":"object","properties":{"n":{"type":"integer"}}}},` +
			`"oneOf":[{"$ref":"#/$defs/obj"},{"type":["string","null"]},{"type":"array","items":{"$ref":"#/$defs/obj"}},{"type":"boolean"}]}`,
		[]string{`{"n": 1}`, `"s"`, `null`, `[{}]`, `true`},
		[]string{`1`, `{"n": "x"}`, `[1]`}},
	{"type_beside_oneof",
		// The branches say nothing of type; "object" beside them does.
		`{"type":"object","oneOf":[{"properties":{"k":{"const":"x"}},"required":["k"]},` +
			`{"properties":{"k":{"const":"y"}},"required":["k"]}]}`,
		[]string{`{"k": "x"}`, `{"k": "y"}`},
		[]string{`{"k": "z"}`, `{}`, `"x"`}},
	{"discriminator_through_allof_and_ref",
		`{"$defs":{"a":{"type":"object","properties":{"kind":{"const":"a"}}},"b":{"type":"object","properties":{"kind":{"const":"b"}}}},` +
			`"oneOf":[{"allOf":[{"$ref":"#/$defs/a"},{"required":["kind"]}]},{"allOf":[{"$ref":"#/$defs/b"},{"required":["kind"]}]}]}`,
		[]string{`{"kind": "a"}`, `{"kind": "b"}`},
		[]string{`{"kind": "c"}`, `{}`, `{"kind": 1}`}},
	{"nested_discriminator",
		`{"oneOf":[{"type":"object","properties":{"meta":{"type":"object","properties":{"v":{"const":1}},"required":["v"]}},"required":["meta"]},` +
			`{"type":"object","properties":{"meta":{"type":"object","properties":{"v":{"const":2}},"required":["v"]}},"required":["meta"]}]}`,
		[]string{`{"meta": {"v": 1}}`, `{"meta": {"v": 2}}`},
		[]string{`{"meta": {"v": 3}}`, `{"meta": {}}`, `{}`}},
	{"enum_values_across_branches",
		`{"oneOf":[{"enum":[1,"one",[1,2],{"a":1}]},{"enum":[2,"two",[2,1],{"a":2}]},{"type":"boolean"}]}`,
		[]string{`1`, `"two"`, `[2, 1]`, `{"a": 1}`, `true`},
		[]string{`3`, `[1]`, `{"a": 3}`, `null`}},
}

// TestOneOfDisjointAccepted: each case compiles under strict; over the
// Qwen3 vocabulary, token by token, the independent validator (which
// checks oneOf's "exactly one") agrees with every labelled instance,
// each valid one is accepted and each invalid one refused, and random
// walks of the grammar produce values the validator accepts.
func TestOneOfDisjointAccepted(t *testing.T) {
	seeds := 30
	if testing.Short() || raceEnabled {
		seeds = 5
	}
	tok, v := family(t, "qwen3")
	for _, tc := range oneOfCases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			s := validator(t, tc.name, []byte(tc.schema))
			for _, text := range tc.valid {
				if err := validate(s, text); err != nil {
					t.Fatalf("test data: %s should be valid: %v", text, err)
				}
				if !checkInstance(t, g, tok, text) {
					t.Errorf("valid %s refused", text)
				}
			}
			for _, text := range tc.invalid {
				if validate(s, text) == nil {
					t.Fatalf("test data: %s should be invalid", text)
				}
				if checkInstance(t, g, tok, text) {
					t.Errorf("invalid %s accepted", text)
				}
			}
			for seed := range seeds {
				ids, ok := walkIDs(t, g, vocabPiece(v), rand.New(rand.NewPCG(uint64(seed), 13)), 60)
				if ok {
					checkValid(t, s, string(concat(v, ids)))
				}
			}
		})
	}
}

// TestOneOfOverlapRefused: branches that some value matches twice stay a
// typed error naming oneOf under strict, and a warning without it; the
// overlap is shown by an instance the validator finds in two branches.
func TestOneOfOverlapRefused(t *testing.T) {
	v := byteVocab()
	for _, tc := range []struct {
		name, schema, both string
	}{
		{"discriminator_required_nowhere",
			`{"oneOf":[{"type":"object","properties":{"is":{"const":"q"}},"required":["queue"]},` +
				`{"type":"object","properties":{"is":{"const":"r"}},"required":["exchange"]}]}`,
			`{"queue": 1, "exchange": 1}`},
		{"no_type_so_strings_match_both",
			`{"oneOf":[{"properties":{"k":{"const":"x"}},"required":["k"]},{"properties":{"k":{"const":"y"}},"required":["k"]}]}`,
			`"s"`},
		{"equal_numbers_spelled_apart",
			`{"oneOf":[{"type":"object","properties":{"v":{"const":1}},"required":["v"]},` +
				`{"type":"object","properties":{"v":{"enum":[1.0,2]}},"required":["v"]}]}`,
			`{"v": 1}`},
		{"equal_exponent",
			`{"oneOf":[{"enum":[100]},{"enum":[1e2]}]}`, `100`},
		{"equal_objects_other_order",
			`{"oneOf":[{"enum":[{"a":1,"b":[2]}]},{"const":{"b":[2.0],"a":1}}]}`, `{"a": 1, "b": [2]}`},
		{"integer_and_number",
			`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `1`},
		{"additional_properties_schema_allows_it",
			`{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},` +
				`{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":{"type":"string"}}]}`,
			`{"a": "x"}`},
		{"ref_siblings_ignored_before_2019",
			// Drafts up to 7 ignore "type" beside $ref: the first branch
			// is then any value, and the proof does not rely on it.
			`{"$defs":{"any":{}},"oneOf":[{"$ref":"#/$defs/any","type":"string"},{"type":"number"}]}`, ``},
		{"discriminator_in_allof_not_required",
			`{"$defs":{"a":{"type":"object","properties":{"kind":{"const":"a"}}},"b":{"type":"object","properties":{"kind":{"const":"b"}}}},` +
				`"oneOf":[{"allOf":[{"$ref":"#/$defs/a"},{"minProperties":0}]},{"allOf":[{"$ref":"#/$defs/b"}]}]}`,
			`{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.both != "" {
				s := validator(t, tc.name, []byte(tc.schema))
				if validate(s, tc.both) == nil {
					t.Fatalf("test data: %s should match two branches", tc.both)
				}
			}
			_, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
			var se *grammar.SchemaError
			if !errors.As(err, &se) || se.Keyword != "oneOf" {
				t.Fatalf("strict compile: got %v, want a SchemaError naming oneOf", err)
			}
			g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{})
			if err != nil {
				t.Fatalf("compile without strict: %v", err)
			}
			found := false
			for _, w := range g.Warnings() {
				found = found || w.Keyword == "oneOf"
			}
			if !found {
				t.Errorf("no warning naming oneOf: %v", g.Warnings())
			}
		})
	}
}
