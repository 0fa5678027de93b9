package grammar_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/prism-local/prism/engine/grammar"
)

// exactCase is a schema with instances written as the grammar writes
// them (members in the schema's order): each must be accepted exactly
// when the independent validator accepts it, so both the instances'
// verdicts and the grammar are checked. refused names the keyword a
// strict compile must refuse instead.
type exactCase struct {
	name, schema string
	instances    []string
	refused      string
}

func runExact(t *testing.T, cases []exactCase) {
	t.Helper()
	v := byteVocab()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
			if tc.refused != "" {
				var se *grammar.SchemaError
				if !errors.As(err, &se) || se.Keyword != tc.refused {
					t.Fatalf("compile %s: got %v, want a SchemaError naming %q", tc.schema, err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("compile %s: %v", tc.schema, err)
			}
			s := validator(t, strings.ReplaceAll(tc.name, " ", "_"), []byte(tc.schema))
			valid := 0
			for _, text := range tc.instances {
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
				if err != nil {
					t.Fatalf("instance %s: %v", text, err)
				}
				want := s.Validate(inst) == nil
				if want {
					valid++
				}
				if got := accepts(g, text); got != want {
					t.Errorf("%s: grammar accepts %s: %v, validator: %v", tc.schema, text, got, want)
				}
			}
			if valid == 0 || valid == len(tc.instances) {
				t.Errorf("%s: the instances should hold valid and invalid ones (%d of %d valid)", tc.schema, valid, len(tc.instances))
			}
		})
	}
}

func TestNotIfDependencies(t *testing.T) {
	runExact(t, []exactCase{
		{name: "not empty", schema: `{"anyOf":[{"type":"string"},{"not":{}}]}`,
			instances: []string{`"a"`, `1`, `null`, `{}`}},
		{name: "not type", schema: `{"not":{"type":["string","null"]}}`,
			instances: []string{`"a"`, `null`, `1`, `1.5`, `true`, `{}`, `[]`}},
		{name: "not integer is refused", schema: `{"not":{"type":"integer"}}`, refused: "not"},
		{name: "not integer beside number is refused", schema: `{"not":{"type":"integer"},"type":"string"}`, refused: "not"},
		{name: "not required", schema: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"not":{"required":["a","b"]}}`,
			instances: []string{`{}`, `{"a": 1}`, `{"b": 1}`, `{"a": 1, "b": 2}`, `{"c": 1}`}},
		{name: "not required beside additionalProperties", schema: `{"type":"object","additionalProperties":{"type":"string"},"not":{"required":["image"]}}`,
			instances: []string{`{}`, `{"a": "x"}`, `{"image": "x"}`, `{"a": 1}`}},
		{name: "not const null", schema: `{"type":["string","null"],"not":{"const":null}}`,
			instances: []string{`"a"`, `null`}},
		{name: "not enum of booleans", schema: `{"not":{"enum":[true]},"type":"boolean"}`,
			instances: []string{`true`, `false`}},
		{name: "not enum of strings", schema: `{"type":"string","not":{"enum":["a","ab",""]}}`,
			instances: []string{`"a"`, `"ab"`, `""`, `"b"`, `"abc"`, `"aa"`}},
		{name: "not enum of strings with a pattern", schema: `{"type":"string","pattern":"^a","maxLength":2,"not":{"const":"ab"}}`,
			instances: []string{`"a"`, `"ab"`, `"ac"`, `"b"`, `"abc"`}},
		{name: "not enum of numbers is refused", schema: `{"type":"integer","not":{"enum":[1]}}`, refused: "not"},
		{name: "not minProperties", schema: `{"type":"object","not":{"minProperties":1}}`,
			instances: []string{`{}`, `{"a": 1}`}},
		{name: "not maxItems", schema: `{"type":"array","not":{"maxItems":1}}`,
			instances: []string{`[]`, `[1]`, `[1,2]`, `[1,2,3]`}},
		{name: "not minLength", schema: `{"type":"string","not":{"minLength":3}}`,
			instances: []string{`""`, `"ab"`, `"abc"`}},
		{name: "not of a keyword on one type", schema: `{"not":{"maximum":4}}`,
			instances: []string{`"a"`, `5`, `4`, `4.5`, `null`, `{}`}},
		{name: "not required without type", schema: `{"not":{"required":["a"]}}`,
			instances: []string{`1`, `{}`, `{"a": 1}`, `{"b": 1}`, `[]`}},
		{name: "not minLength without type", schema: `{"not":{"minLength":2}}`,
			instances: []string{`"a"`, `"ab"`, `1`}},
		{name: "not minimum", schema: `{"type":"integer","not":{"minimum":2}}`,
			instances: []string{`1`, `2`, `-5`, `3`}},
		{name: "not anyOf", schema: `{"type":"object","properties":{"build":{},"dockerfile":{}},"not":{"anyOf":[{"required":["build"]},{"required":["dockerfile"]}]}}`,
			instances: []string{`{}`, `{"build": 1}`, `{"dockerfile": 1}`, `{"x": 1}`}},
		{name: "not not", schema: `{"not":{"not":{"type":"string"}}}`,
			instances: []string{`"a"`, `1`}},
		{name: "not properties", schema: `{"type":"object","properties":{"a":{"type":"integer"}},"not":{"properties":{"a":{"type":"number","maximum":3}}}}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 5}`}},
		{name: "not through a reference", schema: `{"definitions":{"s":{"type":"string"}},"not":{"$ref":"#/definitions/s"}}`,
			instances: []string{`"a"`, `2`}},
		{name: "two nots", schema: `{"allOf":[{"not":{"type":"string"}},{"not":{"type":"null"}}]}`,
			instances: []string{`"a"`, `null`, `1`}},
		{name: "if then else", schema: `{"type":"object","properties":{"kind":{"enum":["a","b"]},"n":{"type":"integer"}},"required":["kind"],` +
			`"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["n"]},"else":{"properties":{"n":{"maximum":3}}}}`,
			instances: []string{`{"kind": "a"}`, `{"kind": "a", "n": 9}`, `{"kind": "b"}`, `{"kind": "b", "n": 3}`, `{"kind": "b", "n": 4}`}},
		{name: "if beside enum and const", schema: `{"enum":["a","b",1],"if":{"const":"a"},"then":{"const":"a"},"else":{"type":"string"}}`,
			instances: []string{`"a"`, `"b"`, `1`}},
		{name: "if whose negation cannot be enforced", schema: `{"if":{"multipleOf":2},"then":{"type":"integer"}}`, refused: "if"},
		{name: "if then else on types", schema: `{"if":{"type":"string"},"then":{"minLength":2},"else":{"type":"integer"}}`,
			instances: []string{`"a"`, `"ab"`, `1`, `1.5`, `null`}},
		{name: "if required then required", schema: `{"type":"object","properties":{"a":{},"b":{}},"if":{"required":["a"]},"then":{"required":["b"]}}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"b": 2}`}},
		{name: "dependentRequired", schema: `{"type":"object","properties":{"a":{},"b":{},"c":{}},"dependentRequired":{"a":["b"],"c":["a"]}}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"b": 2}`, `{"a": 1, "b": 2, "c": 3}`, `{"b": 2, "c": 3}`}},
		{name: "dependencies both forms", schema: `{"type":"object","properties":{"a":{},"b":{"type":"integer"}},"dependencies":{"a":["b"],"b":{"properties":{"b":{"minimum":2}}}}}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"b": 1}`, `{"b": 2}`}},
		{name: "dependentSchemas", schema: `{"type":"object","properties":{"card":{"type":"string"},"billing":{"type":"string"}},"dependentSchemas":{"card":{"required":["billing"]}}}`,
			instances: []string{`{}`, `{"card": "x"}`, `{"card": "x", "billing": "y"}`, `{"billing": "y"}`}},
		{name: "dependency beside additionalProperties false", schema: `{"type":"object","properties":{"a":{}},"additionalProperties":false,"dependentRequired":{"a":["b"]}}`,
			instances: []string{`{}`, `{"a": 1}`}},
	})
}

// Keywords beside allOf, anyOf, oneOf and $ref are merged into each
// branch; names that are no keyword are ignored there too.
func TestMergedSiblings(t *testing.T) {
	runExact(t, []exactCase{
		{name: "properties beside allOf", schema: `{"type":"object","properties":{"a":{"type":"integer"}},"allOf":[{"properties":{"a":{"minimum":1},"b":{"type":"string"}}}]}`,
			instances: []string{`{}`, `{"a": 0}`, `{"a": 1}`, `{"a": 1, "b": "x"}`, `{"a": 1, "b": 2}`}},
		{name: "additionalProperties false beside a branch's properties", schema: `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false,"allOf":[{"properties":{"b":{"type":"string"}},"required":["a"]}]}`,
			instances: []string{`{"a": 1}`, `{}`, `{"a": 1, "b": "x"}`}},
		{name: "additionalProperties schema on both sides", schema: `{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"integer"},"anyOf":[{"properties":{"b":{"minimum":2}},"additionalProperties":{"maximum":5}}]}`,
			instances: []string{`{}`, `{"a": "x"}`, `{"a": 9}`, `{"b": 2}`, `{"b": 1}`, `{"c": 3}`, `{"c": 7}`, `{"c": "x"}`}},
		{name: "two anyOf", schema: `{"allOf":[{"anyOf":[{"type":"string"},{"type":"integer"}]},{"anyOf":[{"type":"integer"},{"type":"null"}]}]}`,
			instances: []string{`"a"`, `1`, `null`, `true`}},
		{name: "anyOf beside anyOf in allOf", schema: `{"anyOf":[{"type":"string"},{"type":"integer"}],"allOf":[{"anyOf":[{"type":"integer","minimum":2},{"type":"string","minLength":2}]}]}`,
			instances: []string{`"a"`, `"ab"`, `1`, `2`}},
		{name: "unknown names beside $ref", schema: `{"definitions":{"a":{"type":"integer"}},"properties":{"x":{"$ref":"#/definitions/a","x-intellij-html-description":"d","example":3}}}`,
			instances: []string{`{"x": 1}`, `{"x": "a"}`}},
		{name: "unknown names beside allOf", schema: `{"_id":"x","allOf":[{"type":"integer"},{"_id":"y","minimum":0}]}`,
			instances: []string{`1`, `-1`}},
	})
}

func TestPropertyCounts(t *testing.T) {
	runExact(t, []exactCase{
		{name: "minProperties over extras", schema: `{"type":"object","minProperties":1}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`}},
		{name: "minProperties over a listed and an extra member", schema: `{"type":"object","properties":{"a":{}},"minProperties":2}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"b": 2}`}},
		// Extra members may repeat a name, which validators read as one
		// member: two of them are not two members.
		{name: "minProperties past one extra member", schema: `{"type":"object","minProperties":2}`, refused: "minProperties"},
		{name: "not maxProperties past one extra member", schema: `{"not":{"maxProperties":1}}`, refused: "minProperties"},
		{name: "minProperties over optional properties", schema: `{"type":"object","properties":{"a":{},"b":{},"c":{}},"required":["a"],"additionalProperties":false,"minProperties":2}`,
			instances: []string{`{"a": 1}`, `{"a": 1, "b": 2}`, `{"a": 1, "c": 3}`, `{"a": 1, "b": 2, "c": 3}`}},
		{name: "maxProperties with extras", schema: `{"type":"object","properties":{"a":{"type":"integer"}},"maxProperties":2}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"a": 1, "b": 2, "c": 3}`, `{"b": 2, "c": 3}`, `{"b": 2, "c": 3, "d": 4}`}},
		{name: "both bounds", schema: `{"type":"object","additionalProperties":{"type":"string"},"minProperties":1,"maxProperties":1}`,
			instances: []string{`{}`, `{"a": "x"}`, `{"a": "x", "b": "y"}`, `{"a": 1}`}},
	})
	runExact(t, []exactCase{
		{name: "allOf with a false branch", schema: `{"anyOf":[{"type":"string"},{"allOf":[{"type":"integer"},false]}]}`,
			instances: []string{`"a"`, `1`}},
		{name: "member counts above the limit", schema: `{"type":"object","minProperties":100}`, refused: "minProperties"},
	})
	if _, err := grammar.CompileSchema(byteVocab(), []byte(`{"type":"object","required":["a","b"],"maxProperties":1}`), grammar.Options{Strict: true}); err == nil {
		t.Error("an object with two required members and at most one compiled")
	}
}

func TestPatternProperties(t *testing.T) {
	runExact(t, []exactCase{
		{name: "one pattern, no others", schema: `{"type":"object","patternProperties":{"^[a-z_]+$":{"type":"integer"}},"additionalProperties":false}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a_b": 1, "c": 2}`, `{"a": "x"}`, `{"A": 1}`, `{"": 1}`}},
		{name: "one pattern, others free", schema: `{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`,
			instances: []string{`{}`, `{"x-a": "s"}`, `{"x-a": 1}`, `{"y": 1}`, `{"ax-": 1}`, `{"y": 1, "x-": "s"}`}},
		{name: "unanchored pattern", schema: `{"type":"object","patternProperties":{"id":{"type":"integer"}},"additionalProperties":{"type":"string"}}`,
			instances: []string{`{"myid": 1}`, `{"idx": 1}`, `{"myid": "a"}`, `{"name": "a"}`, `{"name": 1}`}},
		{name: "listed names take matching patterns too", schema: `{"type":"object","properties":{"ab":{"type":"integer"},"zz":{"type":"string"}},"patternProperties":{"^a":{"minimum":5}},"additionalProperties":false}`,
			instances: []string{`{"ab": 7}`, `{"ab": 1}`, `{"zz": "x"}`, `{"ac": 9}`, `{"ac": 2}`, `{"b": 9}`}},
		{name: "two overlapping patterns", schema: `{"type":"object","patternProperties":{"^a":{"type":"integer"},"b$":{"minimum":3}},"additionalProperties":{"type":"null"}}`,
			instances: []string{`{"ab": 3}`, `{"ab": 2}`, `{"ab": "x"}`, `{"a": 1}`, `{"cb": 5}`, `{"cb": "x"}`, `{"c": null}`, `{"c": 1}`}},
		{name: "required name matched by a pattern", schema: `{"type":"object","required":["k1"],"patternProperties":{"^k[0-9]$":{"type":"boolean"}},"additionalProperties":false}`,
			instances: []string{`{"k1": true}`, `{"k1": 1}`, `{}`, `{"k1": true, "k2": false}`}},
		{name: "with maxProperties", schema: `{"type":"object","patternProperties":{".*":{"type":"integer"}},"maxProperties":1}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"a": "x"}`}},
		{name: "non-ASCII pattern", schema: `{"type":"object","patternProperties":{"^á":{"type":"integer"}},"additionalProperties":false}`,
			instances: []string{`{"á": 1}`, `{"áb": 1}`, `{"a": 1}`, `{"á": "x"}`}},
		{name: "lookahead is refused", schema: `{"type":"object","patternProperties":{"^(?!x)":{}}}`, refused: "patternProperties"},
	})
}

// A oneOf whose branches may overlap is enforced exactly when each
// branch can be negated: branch i and no other.
func TestOneOfByNegation(t *testing.T) {
	runExact(t, []exactCase{
		{name: "two required lists", schema: `{"type":"object","properties":{"a":{},"b":{}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`,
			instances: []string{`{}`, `{"a": 1}`, `{"b": 1}`, `{"a": 1, "b": 2}`}},
		{name: "overlapping types", schema: `{"oneOf":[{"type":"number"},{"type":"integer","maximum":3},{"type":"string"}]}`,
			refused: "oneOf"},
		{name: "overlapping strings", schema: `{"oneOf":[{"type":"string","maxLength":2},{"type":"string","minLength":1}]}`,
			instances: []string{`""`, `"a"`, `"ab"`, `"abc"`, `1`}},
		{name: "branches without type", schema: `{"oneOf":[{"minimum":3},{"type":"number","maximum":5}]}`,
			instances: []string{`1`, `4`, `6`, `"a"`}},
	})
}

func TestItemsMerged(t *testing.T) {
	runExact(t, []exactCase{
		{name: "items beside allOf", schema: `{"type":"array","items":{"type":"integer"},"allOf":[{"items":{"minimum":2}}]}`,
			instances: []string{`[]`, `[2, 3]`, `[1]`, `["a"]`}},
		{name: "items beside a prefix is refused", schema: `{"type":"array","prefixItems":[{}],"items":{"type":"integer"},"allOf":[{"items":{"minimum":2}}]}`,
			refused: "allOf"},
	})
}

// Bounds on numbers with decimals are enforced exactly, digit by digit.
func TestDecimalBounds(t *testing.T) {
	runExact(t, []exactCase{
		{name: "minimum 0.1", schema: `{"type":"number","minimum":0.1}`,
			instances: []string{`0.1`, `0.10`, `0.09`, `0.099999`, `0.11`, `1`, `0`, `-0.1`, `5.5`, `0.100001`}},
		{name: "exclusive range", schema: `{"type":"number","exclusiveMinimum":0.25,"maximum":10.5}`,
			instances: []string{`0.25`, `0.250`, `0.2501`, `10.5`, `10.50`, `10.51`, `11`, `3`, `0.3`}},
		{name: "negative decimals", schema: `{"type":"number","minimum":-2.75,"exclusiveMaximum":-0.5}`,
			instances: []string{`-2.75`, `-2.76`, `-0.5`, `-0.51`, `-1`, `0`, `-3`, `-2.7`}},
		{name: "both bounds on one integer part", schema: `{"type":"number","minimum":3.14,"maximum":3.15}`,
			instances: []string{`3.14`, `3.145`, `3.15`, `3.151`, `3.139`, `3`, `4`}},
		{name: "draft 4 flag", schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","minimum":0.5,"exclusiveMinimum":true}`,
			instances: []string{`0.5`, `0.5000001`, `1`}},
		{name: "exponent bound", schema: `{"type":"number","maximum":1e-3}`,
			instances: []string{`0.001`, `0.0011`, `0.0009`, `-5`}},
		{name: "beyond 1e15 is refused", schema: `{"type":"number","maximum":1e16}`, refused: "maximum"},
	})
	// A point needs a digit after it, bounded or not.
	for _, schema := range []string{`{"type":"number"}`, `{"type":"number","minimum":0.1}`, `{"type":"number","maximum":5}`} {
		g, err := grammar.CompileSchema(byteVocab(), []byte(schema), grammar.Options{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`1.`, `0.`, `3.e1`} {
			if accepts(g, bad) {
				t.Errorf("%s accepts %s", schema, bad)
			}
		}
	}
}

func TestPatternsAndConditionalsMerged(t *testing.T) {
	runExact(t, []exactCase{
		{name: "two patterns", schema: `{"type":"string","pattern":"^a","allOf":[{"pattern":"b$"},{"pattern":"^.{2,3}$"}]}`,
			instances: []string{`"ab"`, `"axb"`, `"a"`, `"b"`, `"axxb"`, `"ac"`}},
		{name: "two patterns beside enum", schema: `{"enum":["ab","ba","abc"],"pattern":"^a","allOf":[{"pattern":"b$"}]}`,
			instances: []string{`"ab"`, `"ba"`, `"abc"`}},
		{name: "if beside allOf and inside", schema: `{"type":"object","properties":{"a":{},"b":{},"c":{}},"if":{"required":["a"]},"then":{"required":["b"]},` +
			`"allOf":[{"if":{"required":["b"]},"then":{"required":["c"]}}]}`,
			instances: []string{`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"a": 1, "b": 2, "c": 3}`, `{"b": 2}`, `{"c": 3}`}},
	})
}
