package grammar_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
)

// lengthCases are string schemas that combine length bounds with a
// pattern, a format, each other or a list of values, with instances at
// the bounds (valid) and just past them (invalid), written as JSON texts.
// JSON Schema counts the code points of the decoded string: "é" and
// "😀" are one character each, and so is every escape (\n, \", \u0001).
var lengthCases = []struct {
	name           string
	schema         string
	valid, invalid []string
}{
	{"pattern_both_bounds", `{"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":4}`,
		[]string{`"ab"`, `"abcd"`}, []string{`"a"`, `"abcde"`, `"ab1"`, `""`}},
	{"pattern_min_only", `{"type":"string","pattern":"^(ab)*$","minLength":4}`,
		[]string{`"abab"`, `"ababab"`}, []string{`"ab"`, `""`, `"aba"`}},
	{"unanchored_multibyte", `{"type":"string","pattern":"é","minLength":3,"maxLength":3}`,
		[]string{`"éaa"`, `"ééé"`, `"aaé"`}, []string{`"éa"`, `"éaaa"`, `"aaa"`}},
	{"escapes_count_once", `{"type":"string","pattern":"^[^x]*$","maxLength":3}`,
		[]string{`"a\nb"`, `"\"\\\u0001"`, `"\t\t\t"`, `"\/ab"`}, []string{`"a\nbc"`, `"\"\"\"\""`, `"\u0001\u0002\u0003\u0004"`, `"ax"`}},
	{"escapes_min", `{"type":"string","pattern":"^[^x]*$","minLength":3}`,
		[]string{`"\n\n\n"`, `"\u0001bc"`}, []string{`"\n\n"`, `"\\a"`}},
	{"astral_code_points", `{"type":"string","pattern":"^.+$","maxLength":2}`,
		[]string{`"😀😀"`, `"中"`}, []string{`"😀😀😀"`, `"中文字"`}},
	{"format_email_max", `{"type":"string","format":"email","maxLength":12}`,
		[]string{`"a@b.co"`, `"abcdefg@b.co"`}, []string{`"abcdefgh@b.co"`, `"abcdef@bcd.co"`}},
	{"format_date_min", `{"type":"string","format":"date-time","minLength":24}`,
		[]string{`"2024-02-29T12:00:00.500Z"`, `"2024-02-29T12:00:00+01:00"`}, []string{`"2024-02-29T12:00:00Z"`, `"2024-02-29T12:00:00.5Z"`}},
	{"pattern_and_format", `{"type":"string","format":"date","pattern":"^2024-"}`,
		[]string{`"2024-02-29"`, `"2024-12-31"`}, []string{`"2023-02-28"`, `"2024-13-01"`, `"2024-02-30"`}},
	{"pattern_format_length", `{"type":"string","format":"hostname","pattern":"\\.com$","maxLength":10}`,
		[]string{`"abc.com"`, `"abcdef.com"`}, []string{`"abcdefg.com"`, `"abc.org"`}},
	{"format_uri_max", `{"type":"string","format":"uri","maxLength":30}`,
		[]string{`"http://[::1]:80/a?b=c#d/?"`, `"mailto:a@b.co"`, `"urn:isbn:0451450523"`, `"a:"`, `"ftp://u%20s:p@h/x%2F"`, `"f:/a//b;c=d"`, `"s+1.x-y://1.2.3.4:/"`},
		[]string{`"/relative/path"`, `"1a:b"`, `"http://a b/"`, `"http://h/%zz"`, `"http://[1.2.3.4]/"`, `"http://example.com/abcdefghijkl"`, `"ht tp://x"`, `""`}},
	{"format_uri_reference_max", `{"type":"string","format":"uri-reference","maxLength":24}`,
		[]string{`"../a/b?c#d"`, `"//h:8/p"`, `"#frag"`, `""`, `"a:b"`, `"?q=1"`, `"./x:y"`, `"//[fe80::1]"`},
		[]string{`"a\\b"`, `":x"`, `"1a:b"`, `"%zz"`, `"//h /a"`, `"../a/b/c/d/e/f/g/h/i/j/k/l"`, `"//[::1"`}},
	{"format_byte_max", `{"type":"string","format":"byte","maxLength":8}`,
		[]string{`""`, `"QQ=="`, `"QUI="`, `"QUJD"`, `"QUJDRA=="`, `"+/9w"`},
		[]string{`"QQ"`, `"QR=="`, `"QUJ="`, `"Q==="`, `"QUJDREVGRw=="`, `"QUJD\n"`, `"QU-D"`}},
	{"enum_lengths", `{"enum":["a","abc","abcdef",5,"é😀x"],"maxLength":3}`,
		[]string{`"a"`, `"abc"`, `5`, `"é😀x"`}, []string{`"abcdef"`, `"ab"`}},
	{"const_pattern", `{"const":"hello","pattern":"^h","minLength":5}`,
		[]string{`"hello"`}, []string{`"hell"`}},
	{"enum_format", `{"type":"string","enum":["2024-01-01","not a date","2023-02-29"],"format":"date"}`,
		[]string{`"2024-01-01"`}, []string{`"not a date"`, `"2023-02-29"`}},
}

// checkInstance feeds text to a fresh matcher of g token by token. At each
// token the mask and Advance must agree; it returns whether every token
// was allowed and the text may end after the last.
func checkInstance(t *testing.T, g *grammar.Grammar, tok *tokenizer.Tokenizer, text string) bool {
	t.Helper()
	mask := make([]uint64, (g.VocabSize()+63)/64)
	m := g.Start()
	for k, id := range tok.Encode(text) {
		clear(mask)
		m.Mask(mask)
		inMask := mask[id>>6]&(1<<(id&63)) != 0
		advanced := m.Advance(id)
		if inMask != advanced {
			t.Fatalf("%s token %d (%d): mask says %v, Advance %v", text, k, id, inMask, advanced)
		}
		if !advanced {
			return false
		}
	}
	return m.CanEnd()
}

// TestLengthBoundsWithPatterns checks the cases over the Qwen3 and Llama
// 3.1 vocabularies: the independent validator agrees with each instance's
// label, every valid instance is accepted to its end and every invalid one
// is refused at some token (or may not end), and random walks produce
// values the validator accepts.
func TestLengthBoundsWithPatterns(t *testing.T) {
	seeds := 20
	if testing.Short() || raceEnabled {
		seeds = 3
	}
	for _, fam := range []string{"qwen3", "llama3_1"} {
		t.Run(fam, func(t *testing.T) {
			tok, v := family(t, fam)
			for _, tc := range lengthCases {
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
						ids, ok := walkIDs(t, g, vocabPiece(v), rand.New(rand.NewPCG(uint64(seed), 41)), 40)
						if ok {
							checkValid(t, s, string(concat(v, ids)))
						}
					}
				})
			}
		})
	}
}

func validate(s *jsonschema.Schema, text string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// TestLengthBoundsRefused: a bound whose product with the pattern would be
// too large is a typed error naming the keyword under strict and a
// warning otherwise; a bound no string of the pattern meets leaves no
// value at all.
func TestLengthBoundsRefused(t *testing.T) {
	v := byteVocab()
	for _, tc := range []struct {
		schema, keyword string
	}{
		{`{"type":"string","pattern":"^a+$","maxLength":2000000000}`, "maxLength"},
		{`{"type":"string","pattern":"^a+$","minLength":2000000}`, "minLength"},
		{`{"type":"string","pattern":"^([a-z]{1,60}\\.)*$","maxLength":4000}`, "maxLength"},
		{`{"type":"string","format":"uri-reference","maxLength":2048}`, "maxLength"},
	} {
		_, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
		var se *grammar.SchemaError
		if !errors.As(err, &se) || se.Keyword != tc.keyword {
			t.Errorf("%s: got %v, want a SchemaError naming %s", tc.schema, err, tc.keyword)
		}
		g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{})
		if err != nil || len(g.Warnings()) != 1 || g.Warnings()[0].Keyword != tc.keyword {
			t.Errorf("%s non-strict: %v, warnings %v", tc.schema, err, g.Warnings())
		}
	}
	for _, schema := range []string{
		`{"type":"string","format":"date","maxLength":9}`,
		`{"type":"string","format":"uuid","minLength":37}`,
		`{"type":"string","pattern":"^[0-9]{3}$","minLength":4}`,
		`{"const":"hello","pattern":"^x"}`,
		`{"enum":["abcd","efgh"],"maxLength":3}`,
		`{"type":"string","format":"ipv4","pattern":"^[a-z]"}`,
	} {
		_, err := grammar.CompileSchema(v, []byte(schema), grammar.Options{})
		var se *grammar.SchemaError
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want the error that no value satisfies it", schema, err)
		}
	}
	// Implied bounds cost nothing: a date is always 10 characters.
	for _, schema := range []string{`{"type":"string","format":"date","maxLength":10}`, `{"type":"string","format":"uuid","maxLength":2000000000}`} {
		if _, err := grammar.CompileSchema(v, []byte(schema), grammar.Options{Strict: true}); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
}

// TestLengthBoundsExhaustive compares the grammar with the validator on
// every string of up to five characters over a small alphabet (a plain
// letter, a two-byte letter, an escape), for schemas whose bounds and
// patterns interact.
func TestLengthBoundsExhaustive(t *testing.T) {
	v := byteVocab()
	alphabet := []string{"a", "b", "é", `\n`, `\u0001`}
	var texts []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		texts = append(texts, `"`+prefix+`"`)
		if n == 5 {
			return
		}
		for _, c := range alphabet {
			gen(prefix+c, n+1)
		}
	}
	gen("", 0)
	for i, schema := range []string{
		`{"type":"string","pattern":"^a","minLength":2,"maxLength":4}`,
		`{"type":"string","pattern":"b$","minLength":3}`,
		`{"type":"string","pattern":"^(a|é)*\\n?$","maxLength":3}`,
		`{"type":"string","pattern":"[^b]{2}","minLength":1,"maxLength":3}`,
		`{"type":"string","pattern":"^.*$","minLength":4,"maxLength":4}`,
	} {
		g, err := grammar.CompileSchema(v, []byte(schema), grammar.Options{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		s := validator(t, fmt.Sprint("exhaustive", i), []byte(schema))
		for _, text := range texts {
			m := g.Start()
			got := m.AdvanceBytes([]byte(text)) && m.CanEnd()
			if want := validate(s, text) == nil; got != want {
				t.Errorf("%s on %s: grammar %v, validator %v", schema, text, got, want)
			}
		}
	}
}

// TestSharedKeywordsConjoined: a keyword both beside allOf, anyOf or $ref
// and inside a branch is merged where one value says exactly what both
// do (common types, the tighter bound, the union of required lists); the
// grammar then agrees with the validator on every instance.
func TestSharedKeywordsConjoined(t *testing.T) {
	v := byteVocab()
	for i, tc := range []struct {
		schema string
		texts  []string
	}{
		{`{"type":"string","maxLength":5,"allOf":[{"maxLength":3},{"pattern":"^a"}]}`,
			[]string{`"a"`, `"abc"`, `"abcd"`, `"b"`, `""`}},
		{`{"type":["string","integer"],"allOf":[{"type":["number","null"]}]}`,
			[]string{`1`, `-20`, `1.5`, `"x"`, `null`}},
		{`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a"],"allOf":[{"required":["b"]}]}`,
			[]string{`{"a":1,"b":2}`, `{"a":1}`, `{"b":2}`}},
		{`{"type":"integer","minimum":0,"maximum":20,"allOf":[{"minimum":5},{"maximum":10}]}`,
			[]string{`5`, `10`, `4`, `11`, `0`, `20`}},
		{`{"type":"array","maxItems":3,"anyOf":[{"maxItems":1},{"minItems":3}]}`,
			[]string{`[]`, `[1]`, `[1,2]`, `[1,2,3]`, `[1,2,3,4]`}},
		{`{"$defs":{"s":{"type":"string","minLength":2}},"$ref":"#/$defs/s","minLength":4,"format":"hostname"}`,
			[]string{`"abcd"`, `"abc"`, `"ab.cd"`, `"a"`}},
	} {
		g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		s := validator(t, fmt.Sprint("conjoined", i), []byte(tc.schema))
		for _, text := range tc.texts {
			m := g.Start()
			got := m.AdvanceBytes([]byte(text)) && m.CanEnd()
			if want := validate(s, text) == nil; got != want {
				t.Errorf("%s on %s: grammar %v, validator %v", tc.schema, text, got, want)
			}
		}
	}
}

// TestEnumWithKeywords: keywords that assert on one type, beside enum or
// const, are decided for each listed value; the grammar agrees with the
// validator on every value listed.
func TestEnumWithKeywords(t *testing.T) {
	v := byteVocab()
	for i, tc := range []struct {
		schema string
		texts  []string
	}{
		{`{"enum":[1,2.5,3,10,"x","xyz",[1,2],[],{"a":1},{"b":2}],"minimum":2,"exclusiveMaximum":10,"multipleOf":0.5,"maxItems":1,"required":["b"],"maxLength":1}`,
			[]string{`1`, `2.5`, `3`, `10`, `"x"`, `"xyz"`, `[1,2]`, `[]`, `{"a":1}`, `{"b":2}`}},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","enum":[0,5,10,2e0,0.1,7.5e-1],"minimum":0,"exclusiveMinimum":true,"maximum":10,"multipleOf":5}`,
			[]string{`0`, `5`, `10`, `2e0`, `0.1`, `7.5e-1`}},
		{`{"const":{"a":1,"b":[1]},"minProperties":2,"maxProperties":2}`, []string{`{"a":1,"b":[1]}`}},
		{`{"const":"2024-02-30","format":"date"}`, nil},
	} {
		g, err := grammar.CompileSchema(v, []byte(tc.schema), grammar.Options{Strict: true})
		if tc.texts == nil {
			if err == nil {
				t.Errorf("%s: compiled, but no value satisfies it", tc.schema)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		s := validator(t, fmt.Sprint("enum", i), []byte(tc.schema))
		for _, text := range tc.texts {
			m := g.Start()
			got := m.AdvanceBytes([]byte(text)) && m.CanEnd()
			if want := validate(s, text) == nil; got != want {
				t.Errorf("%s on %s: grammar %v, validator %v", tc.schema, text, got, want)
			}
		}
	}
}

// TestMaskNoAllocBounded: once a grammar has seen its states, a step
// inside bounded patterns (a length product, a pattern with a format)
// allocates nothing.
func TestMaskNoAllocBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tok, v := family(t, "qwen3")
	g, err := grammar.CompileSchema(v, []byte(`{"type":"object","properties":{
		"u":{"type":"string","pattern":"^[a-z]+$","maxLength":12},
		"d":{"type":"string","format":"date","pattern":"^20"}},"required":["u","d"],"additionalProperties":false}`), grammar.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(`{"u": "abcdefghijkl", "d": "2024-02-29"}`)
	mask := make([]uint64, (v.Size()+63)/64)
	run := func() {
		m := g.Start()
		for _, id := range ids {
			clear(mask)
			m.Mask(mask)
			if !m.Advance(id) {
				t.Fatal("the instance was refused")
			}
		}
	}
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("%v allocations per instance of %d tokens", n, len(ids))
	}
}
