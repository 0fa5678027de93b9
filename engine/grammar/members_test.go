package grammar_test

import (
	"strings"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
)

// TestMemberOrder: an object's members may come in any order; the
// required ones, the dependencies and the member counts still hold
// exactly, and no listed name comes twice.
func TestMemberOrder(t *testing.T) {
	runExact(t, []exactCase{
		{name: "listed in any order", schema: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["a","c"],"additionalProperties":false}`,
			instances: []string{`{"a": 1, "c": true}`, `{"c": true, "a": 1}`, `{"b": "x", "c": false, "a": 2}`, `{"c": true, "b": "x"}`, `{"b": "x"}`, `{"c": 1, "a": 1}`, `{"a": 1, "d": 2, "c": true}`}},
		{name: "extra members between listed ones", schema: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["b"],"additionalProperties":{"type":"string"}}`,
			instances: []string{`{"x": "s", "b": 1}`, `{"a": 1, "x": "s", "b": 2, "y": "t"}`, `{"x": 1, "b": 1}`, `{"x": "s"}`, `{"b": 1, "a": "s"}`}},
		{name: "pattern members in any order", schema: `{"type":"object","properties":{"id":{"type":"integer"}},"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false,"required":["id"]}`,
			instances: []string{`{"x-a": "s", "id": 1}`, `{"id": 1, "x-a": "s", "x-b": "t"}`, `{"x-a": 1, "id": 1}`, `{"y": "s", "id": 1}`}},
		{name: "counts in any order", schema: `{"type":"object","properties":{"a":{},"b":{},"c":{}},"minProperties":2,"maxProperties":2,"additionalProperties":false}`,
			instances: []string{`{"c": 1, "a": 2}`, `{"b": 1, "c": 2}`, `{"c": 1}`, `{"c": 1, "b": 2, "a": 3}`}},
		{name: "maxProperties with extras in any order", schema: `{"type":"object","properties":{"a":{"type":"integer"}},"maxProperties":2}`,
			instances: []string{`{"x": 1, "a": 1}`, `{"x": 1, "a": 1, "y": 2}`, `{"x": 1, "y": 2}`, `{"x": 1, "y": 2, "a": 3}`}},
		{name: "dependencies in any order", schema: `{"type":"object","properties":{"card":{"type":"string"},"billing":{"type":"string"}},"dependentRequired":{"card":["billing"]}}`,
			instances: []string{`{"billing": "x", "card": "y"}`, `{"card": "y", "billing": "x"}`, `{"card": "y"}`, `{"billing": "x"}`}},
		{name: "nested objects in any order", schema: `{"type":"object","properties":{"p":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]},"q":{"const":1}},"required":["q","p"]}`,
			instances: []string{`{"p": {"y": 1, "x": 2}, "q": 1}`, `{"q": 1, "p": {"x": 1, "y": 2}}`, `{"q": 1, "p": {"y": 1}}`, `{"p": {"y": 1, "x": 2}}`}},
		{name: "a member no value satisfies is never written", schema: `{"type":"object","properties":{"a":false,"b":{"type":"integer"}},"required":["b"]}`,
			instances: []string{`{"b": 1}`, `{"a": 1, "b": 1}`, `{"b": 1, "a": null}`}},
	})
}

// TestMemberNamesOnce: a listed name is never written twice, whatever the
// order (validators would read the last value, but the text would not be
// the object it spells).
func TestMemberNamesOnce(t *testing.T) {
	g, err := grammar.CompileSchema(byteVocab(), []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`), grammar.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{`{"a": 1, "a": 2}`, `{"a": 1, "b": 2, "a": 3}`, `{"b": 1, "a": 2, "b": 3}`} {
		if accepts(g, text) {
			t.Errorf("accepted %s", text)
		}
	}
}

// TestRefSiblingsByDraft: a schema that declares a draft up to 7 ignores
// the keywords beside a $ref, as its validators do; a later draft, or no
// $schema, applies them.
func TestRefSiblingsByDraft(t *testing.T) {
	const defs = `"definitions":{"w":{"type":"object","properties":{"a":{"type":"string"}}}}`
	runExact(t, []exactCase{
		{name: "draft 7 ignores them", schema: `{"$schema":"http://json-schema.org/draft-07/schema#",` + defs + `,"properties":{"x":{"$ref":"#/definitions/w","required":["b"]}}}`,
			instances: []string{`{"x": {"a": "s"}}`, `{"x": {"a": "s", "b": 1}}`, `{"x": {"a": 1}}`, `{"x": 2}`}},
		{name: "draft 4 ignores them inside anyOf, not the anyOf's siblings", schema: `{"$schema":"http://json-schema.org/draft-04/schema#",` + defs + `,"type":"object","required":["z"],"anyOf":[{"$ref":"#/definitions/w","required":["b"]}]}`,
			instances: []string{`{"z": 1}`, `{"z": 1, "a": "s"}`, `{"a": "s"}`, `{"z": 1, "a": 1}`}},
		{name: "draft 2020-12 applies them", schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema",` + defs + `,"properties":{"x":{"$ref":"#/definitions/w","required":["b"]}}}`,
			instances: []string{`{"x": {"a": "s"}}`, `{"x": {"a": "s", "b": 1}}`, `{"x": {"a": 1, "b": 1}}`}},
		{name: "no $schema applies them", schema: `{` + defs + `,"properties":{"x":{"$ref":"#/definitions/w","required":["b"]}}}`,
			instances: []string{`{"x": {"a": "s"}}`, `{"x": {"a": "s", "b": 1}}`}},
		{name: "draft 7 negation of a $ref with siblings", schema: `{"$schema":"http://json-schema.org/draft-07/schema#",` + defs + `,"properties":{"x":{"not":{"$ref":"#/definitions/w","required":["b"]}}}}`,
			instances: []string{`{"x": 1}`, `{"x": {"a": 1}}`, `{"x": {"a": "s"}}`, `{"x": {"b": 1}}`}},
	})
}

// TestLongStrings: length bounds past the unrolled chain are counted
// exactly, in characters (an escape or an astral character is one).
func TestLongStrings(t *testing.T) {
	str := func(n int, unit string) string { return `"` + strings.Repeat(unit, n) + `"` }
	runExact(t, []exactCase{
		{name: "maxLength 5000", schema: `{"type":"string","maxLength":5000}`,
			instances: []string{str(0, "a"), str(5000, "a"), str(5001, "a"), str(4999, "é"), str(5000, `\n`), str(5001, `\"`), str(2500, "😀"), str(5001, "😀")}},
		{name: "minLength 300", schema: `{"type":"string","minLength":300}`,
			instances: []string{str(299, "a"), str(300, "a"), str(300, `\u0001`), str(299, "中"), str(7000, "b")}},
		{name: "both, in an object", schema: `{"type":"object","properties":{"s":{"type":"string","minLength":4000,"maxLength":4500},"t":{"type":["string","null"],"maxLength":100000}},"required":["s"]}`,
			instances: []string{`{"s": ` + str(4000, "x") + `}`, `{"s": ` + str(3999, "x") + `}`, `{"s": ` + str(4501, "x") + `}`, `{"t": null, "s": ` + str(4500, "é") + `}`, `{"t": ` + str(20000, "y") + `, "s": ` + str(4200, "x") + `}`}},
		{name: "maxLength past 32 bits", schema: `{"type":"string","maxLength":1e12}`,
			instances: []string{str(10, "a"), `1`}},
	})
}

// TestMultipleOf: integer steps are enforced exactly (the multiples written
// as integers); steps with a fraction are refused by name.
func TestMultipleOf(t *testing.T) {
	runExact(t, []exactCase{
		{name: "step 1 on number", schema: `{"type":"number","multipleOf":1,"minimum":1}`,
			instances: []string{`1`, `7`, `0`, `-3`, `1.5`}},
		{name: "step 4 within bounds", schema: `{"type":"integer","multipleOf":4,"minimum":16,"maximum":100}`,
			instances: []string{`16`, `100`, `20`, `12`, `104`, `18`}},
		{name: "step 10 below an exclusive maximum", schema: `{"type":"number","multipleOf":10,"exclusiveMaximum":100}`,
			instances: []string{`90`, `0`, `-10`, `-1230`, `100`, `95`, `-15`}},
		{name: "step 7 unbounded", schema: `{"multipleOf":7}`,
			instances: []string{`0`, `7`, `343`, `-49`, `700000000000007`, `8`, `-50`, `"x"`, `null`}},
		{name: "step 3 above a lower bound", schema: `{"type":"integer","multipleOf":3.0,"minimum":40}`,
			instances: []string{`42`, `99`, `1002`, `123456789`, `39`, `43`, `1000`}},
		{name: "steps merged across allOf", schema: `{"type":"integer","multipleOf":4,"allOf":[{"multipleOf":6}]}`,
			instances: []string{`12`, `24`, `-36`, `8`, `6`, `18`}},
		{name: "a decimal step is refused", schema: `{"type":"number","multipleOf":0.01}`, refused: "multipleOf"},
		{name: "too many listed multiples", schema: `{"type":"integer","multipleOf":2,"minimum":0,"maximum":100000}`, refused: "multipleOf"},
	})
}

// TestListedBesideKeywords: listed values beside keywords such as
// properties or items are decided value by value against those keywords.
func TestListedBesideKeywords(t *testing.T) {
	runExact(t, []exactCase{
		{name: "enum beside properties", schema: `{"enum":[{"a":1},{"a":"x"},{"b":2},3],"properties":{"a":{"type":"integer"}}}`,
			instances: []string{`{"a": 1}`, `{"b": 2}`, `3`, `{"a": "x"}`, `{"c": 1}`}},
		{name: "enum beside items", schema: `{"enum":[[1,2],[1,"a"],"s\n\"q\""],"items":{"type":"integer"}}`,
			instances: []string{`[1, 2]`, `"s\n\"q\""`, `[1, "a"]`, `[]`}},
		{name: "enum beside a double negation", schema: `{"allOf":[{"enum":[{"foo":1},{"foo":true}]},{"not":{"not":{"additionalProperties":{"type":"boolean"},"properties":{"bar":{}}}}}]}`,
			instances: []string{`{"foo": true}`, `{"foo": 1}`, `{}`}},
		{name: "const beside additionalProperties", schema: `{"type":"object","anyOf":[{"const":{"k":"v"}},{"const":{"n":1}}],"additionalProperties":{"type":"string"}}`,
			instances: []string{`{"k": "v"}`, `{"n": 1}`, `{}`}},
		{name: "enum beside itself through a reference", schema: `{"$defs":{"x":{"enum":[{},{"a":{}}],"properties":{"a":{"$ref":"#/$defs/x"}}}},"$ref":"#/$defs/x"}`, refused: "properties"},
	})
}

func TestJSONPointerFormats(t *testing.T) {
	runExact(t, []exactCase{
		{name: "json-pointer", schema: `{"type":"string","format":"json-pointer"}`,
			instances: []string{`""`, `"/"`, `"/a~0b/c~1d/0"`, `"/é 中"`, `"a/b"`, `"/a~2"`, `"/a~"`}},
		{name: "relative-json-pointer", schema: `{"type":"string","format":"relative-json-pointer"}`,
			instances: []string{`"0"`, `"1#"`, `"12/a/b"`, `"01/a"`, `"#"`, `"/a"`, `"2/a~"`}},
	})
}

func TestConstsMerged(t *testing.T) {
	runExact(t, []exactCase{
		{name: "two different consts", schema: `{"anyOf":[{"type":"string"},{"const":"a","allOf":[{"const":"b"}]}]}`,
			instances: []string{`"x"`, `1`, `null`}},
		{name: "the same const twice", schema: `{"const":"a","allOf":[{"const":"a"}]}`,
			instances: []string{`"a"`, `"b"`}},
	})
}

// TestContains: contains (at least one matching item), and the negations
// of items and contains built from each other.
func TestContains(t *testing.T) {
	runExact(t, []exactCase{
		{name: "contains", schema: `{"type":"array","contains":{"type":"string"}}`,
			instances: []string{`["a"]`, `[1, "a", 2]`, `[1, 2, "b"]`, `[]`, `[1, 2]`, `"a"`}},
		{name: "contains beside items and counts", schema: `{"type":"array","items":{"type":["integer","string"]},"contains":{"const":"x"},"minItems":2,"maxItems":3}`,
			instances: []string{`["x", 1]`, `[1, 2, "x"]`, `["x"]`, `[1, 2, 3]`, `[1, "x", 2, 3]`, `["x", null]`}},
		{name: "contains after a prefix", schema: `{"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"},"contains":{"type":"integer","minimum":5}}`,
			instances: []string{`[5]`, `[7, "a"]`, `[1, "a"]`, `[1]`, `["a"]`}},
		{name: "not items", schema: `{"not":{"items":{"type":"number"}}}`,
			instances: []string{`[1, "a"]`, `["a"]`, `[1, 2]`, `[]`, `1`, `"s"`}},
		{name: "not contains", schema: `{"type":"array","not":{"contains":{"type":"null"}}}`,
			instances: []string{`[1, "a"]`, `[]`, `[1, null]`, `[null]`}},
		{name: "oneOf made exclusive over items", schema: `{"oneOf":[{"type":"array","items":{"type":"string"}},{"type":"array","items":{"type":["string","number"],"maxLength":2}}]}`,
			instances: []string{`["abc"]`, `[1]`, `["a"]`, `[]`, `["abc", 1]`, `["a", 1]`}},
		{name: "minContains is refused", schema: `{"type":"array","contains":{"type":"string"},"minContains":2}`, refused: "minContains"},
	})
}
