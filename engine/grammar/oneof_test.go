package grammar_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
		{"equal_as_float64",
			// Exactly these differ, but a validator reading float64 (as
			// Python's json does) finds 1 in both branches.
			`{"oneOf":[{"const":1},{"enum":[1.00000000000000000001]}]}`, ``},
		{"integral_as_float64",
			`{"oneOf":[{"type":"integer"},{"const":2.00000000000000000001}]}`, ``},
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
			// Branches made exclusive by negation are exact: the value
			// matching two is refused.
			if g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true}); err == nil && tc.both != "" && accepts(g, tc.both) {
				t.Errorf("accepts %s, which matches two branches", tc.both)
			}
			_, err := grammar.CompileSchemaByProof(v, []byte(tc.schema), grammar.Options{Strict: true})
			var se *grammar.SchemaError
			if !errors.As(err, &se) || se.Keyword != "oneOf" {
				t.Fatalf("strict compile: got %v, want a SchemaError naming oneOf", err)
			}
			g, err := grammar.CompileSchemaByProof(v, []byte(tc.schema), grammar.Options{})
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

// TestOneOfProofAgainstValidator draws random oneOf schemas from the
// facts the proof reads (types, listed values, properties, required,
// additionalProperties, allOf, a type beside the oneOf) and, for each one
// the strict compile accepts, asks the independent validator of every
// value in a pool how many branches it matches: never two.
func TestOneOfProofAgainstValidator(t *testing.T) {
	n := 6000
	if testing.Short() || raceEnabled {
		n = 1500
	}
	v := byteVocab()
	rng := rand.New(rand.NewPCG(5, 13))
	lits := []any{json.Number("1"), json.Number("1.0"), json.Number("2"), json.Number("1e0"), json.Number("2.5"),
		"a", "b", nil, true, map[string]any{"k": json.Number("1")}, []any{json.Number("1")}}
	pick := func() any { return lits[rng.IntN(len(lits))] }
	types := []any{"object", "string", "integer", "number", "null", "boolean", []any{"object", "null"}, []any{"integer", "string"}}
	var sub func(depth int) any
	sub = func(depth int) any {
		s := map[string]any{}
		switch rng.IntN(6) {
		case 0:
			s["const"] = pick()
		case 1:
			s["enum"] = []any{pick(), pick()}
		case 2:
			s["type"] = types[rng.IntN(len(types))]
		case 3:
			return false
		case 4:
			if depth < 2 {
				return branchOf(rng, sub, types, depth+1)
			}
		}
		return s
	}
	var pool []any
	pool = append(pool, lits...)
	pool = append(pool, "c", json.Number("3"), false, map[string]any{})
	for range 150 {
		o := map[string]any{}
		for _, k := range []string{"k", "m", "n"} {
			if rng.IntN(2) == 0 {
				o[k] = pool[rng.IntN(len(pool))]
			}
		}
		pool = append(pool, o)
	}
	compiled := 0
	for i := range n {
		var branches []any
		for range 2 + rng.IntN(2) {
			branches = append(branches, branchOf(rng, sub, types, 0))
		}
		schema := map[string]any{"oneOf": branches}
		beside := map[string]any{}
		if rng.IntN(3) == 0 {
			beside["type"] = "object"
			schema["type"] = "object"
		}
		text, err := json.Marshal(schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := grammar.CompileSchemaByProof(v, text, grammar.Options{Strict: true}); err != nil {
			continue
		}
		compiled++
		var vals []*jsonschema.Schema
		for j, b := range branches {
			bt, _ := json.Marshal(map[string]any{"allOf": []any{b, beside}})
			vals = append(vals, validator(t, fmt.Sprintf("r%d_%d", i, j), bt))
		}
		for _, x := range pool {
			xt, _ := json.Marshal(x)
			matched := 0
			for _, s := range vals {
				if validate(s, string(xt)) == nil {
					matched++
				}
			}
			if matched > 1 {
				t.Fatalf("accepted %s, but %s matches %d branches", text, xt, matched)
			}
		}
	}
	t.Logf("%d of %d schemas compiled", compiled, n)
	if compiled < n/20 {
		t.Errorf("only %d of %d random schemas compiled: the test checks too little", compiled, n)
	}
}

// branchOf draws one random object-ish branch for the proof's test.
func branchOf(rng *rand.Rand, sub func(int) any, types []any, depth int) any {
	b := map[string]any{}
	if rng.IntN(2) == 0 {
		b["type"] = types[rng.IntN(len(types))]
	}
	props := map[string]any{}
	for _, k := range []string{"k", "m"} {
		if rng.IntN(2) == 0 {
			props[k] = sub(depth)
		}
	}
	if len(props) > 0 {
		b["properties"] = props
	}
	var req []any
	for _, k := range []string{"k", "m", "n"} {
		if rng.IntN(3) == 0 {
			req = append(req, k)
		}
	}
	if len(req) > 0 {
		b["required"] = req
	}
	switch rng.IntN(4) {
	case 0:
		b["additionalProperties"] = false
	case 1:
		b["additionalProperties"] = map[string]any{"type": "string"}
	}
	if rng.IntN(5) == 0 {
		b["const"] = map[string]any{"k": json.Number("1")}
	}
	if depth < 1 && rng.IntN(4) == 0 {
		b = map[string]any{"allOf": []any{b, branchOf(rng, sub, types, depth+1)}}
	}
	return b
}
