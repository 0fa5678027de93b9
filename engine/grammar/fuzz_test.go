package grammar_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
)

// randomSchema builds a schema from the keywords the grammar supports.
func randomSchema(r *rand.Rand, depth int) any {
	if depth > 3 {
		return map[string]any{"type": []string{"string", "integer", "boolean", "null"}[r.IntN(4)]}
	}
	switch r.IntN(14) {
	case 0:
		props, req := map[string]any{}, []string{}
		for i := range r.IntN(4) {
			name := fmt.Sprintf("p%d", i)
			props[name] = randomSchema(r, depth+1)
			if r.IntN(2) == 0 {
				req = append(req, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "required": req}
		switch r.IntN(3) {
		case 0:
			s["additionalProperties"] = false
		case 1:
			s["additionalProperties"] = randomSchema(r, depth+1)
		}
		return s
	case 1:
		s := map[string]any{"type": "array", "items": randomSchema(r, depth+1)}
		if r.IntN(2) == 0 {
			s["minItems"] = r.IntN(3)
		}
		if r.IntN(2) == 0 {
			s["maxItems"] = 2 + r.IntN(3)
		}
		if r.IntN(4) == 0 {
			s["contains"] = randomSchema(r, depth+1)
		}
		return s
	case 2:
		return map[string]any{"type": "array", "prefixItems": []any{randomSchema(r, depth+1), randomSchema(r, depth+1)}, "items": r.IntN(2) == 0}
	case 3:
		s := map[string]any{"type": "string"}
		if r.IntN(2) == 0 {
			s["minLength"] = r.IntN(3)
		}
		if r.IntN(2) == 0 {
			s["maxLength"] = 3 + r.IntN(4)
		}
		switch r.IntN(8) {
		case 0: // bounds past the unrolled chain, counted lazily
			s["maxLength"] = 257 + r.IntN(4)
		case 1:
			s["minLength"] = 257 + r.IntN(2)
			delete(s, "maxLength")
		}
		return s
	case 4:
		return map[string]any{"type": "string", "pattern": []string{"^[a-c]+$", "x", "^(ab|cd)*$", "^\\d{2,3}-[A-Z]?$", "é."}[r.IntN(5)]}
	case 5:
		return map[string]any{"type": "string", "format": []string{"date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri", "uri-reference", "byte", "json-pointer", "relative-json-pointer"}[r.IntN(14)]}
	case 6:
		lo := r.IntN(200) - 100
		s := map[string]any{"type": []string{"integer", "number"}[r.IntN(2)], "minimum": lo, "exclusiveMaximum": lo + 1 + r.IntN(300)}
		switch r.IntN(4) {
		case 0: // an integer step, within the bounds or beyond them
			s["multipleOf"] = 1 + r.IntN(12)
		case 1:
			s["multipleOf"] = 1 + r.IntN(12)
			delete(s, []string{"minimum", "exclusiveMaximum"}[r.IntN(2)])
		}
		return s
	case 7:
		s := map[string]any{"enum": []any{"a", 1, nil, []any{true}, map[string]any{"k": "v"}, []any{1, 2}, map[string]any{"k": 3}}[:1+r.IntN(7)]}
		switch r.IntN(4) {
		case 0: // keywords the values are checked against by a grammar of their own
			s["properties"] = map[string]any{"k": randomSchema(r, depth+1)}
		case 1:
			s["items"] = randomSchema(r, depth+1)
		}
		return s
	case 8:
		return map[string]any{"anyOf": []any{randomSchema(r, depth+1), randomSchema(r, depth+1)}}
	case 9:
		return map[string]any{"type": []string{"string", "null", "number"}[:1+r.IntN(3)]}
	case 10:
		return map[string]any{"$defs": map[string]any{"n": map[string]any{"type": "object",
			"properties": map[string]any{"v": randomSchema(r, depth+1), "next": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/n"}, map[string]any{"type": "null"}}}},
			"required":   []string{"v", "next"}, "additionalProperties": false}}, "$ref": "#/$defs/n"}
	case 11:
		// Length bounds within a pattern or a format, and a pattern with a
		// format.
		s := map[string]any{"type": "string"}
		switch r.IntN(3) {
		case 0:
			s["pattern"] = []string{"^[a-c]+$", "x", "^(ab|cd)*$", "é.", "^[^a]*$", "\\.com$"}[r.IntN(6)]
		case 1:
			s["format"] = []string{"date-time", "email", "hostname", "ipv6", "duration", "uri", "uri-reference", "byte"}[r.IntN(8)]
		default:
			s["format"] = []string{"hostname", "email", "date", "uri", "byte"}[r.IntN(5)]
			s["pattern"] = []string{"^[a-m]", "[0-9]$", "\\.", "^2"}[r.IntN(4)]
		}
		if r.IntN(2) == 0 {
			s["minLength"] = r.IntN(8)
		}
		if r.IntN(3) > 0 {
			s["maxLength"] = 2 + r.IntN(12)
		}
		return s
	case 12:
		s := map[string]any{"enum": []any{"a", "abc", "é😀", "a\nb", "2024-01-31", 7}[:1+r.IntN(6)]}
		switch r.IntN(3) {
		case 0:
			s["maxLength"] = r.IntN(4)
		case 1:
			s["minLength"], s["pattern"] = 1+r.IntN(2), "^a"
		default:
			s["format"] = "date"
		}
		return s
	default:
		return map[string]any{"const": r.IntN(5)}
	}
}

// FuzzRandomSchemas: for random schemas and random allowed-token choices a
// walk never reaches a state where nothing is allowed before the text may
// end, and every finished text validates.
func FuzzRandomSchemas(f *testing.F) {
	for s := range uint64(8) {
		f.Add(s, s*31)
	}
	v := byteVocab()
	f.Fuzz(func(t *testing.T, schemaSeed, walkSeed uint64) {
		sr := rand.New(rand.NewPCG(schemaSeed, 1))
		schema, _ := json.Marshal(randomSchema(sr, 0))
		g, err := grammar.CompileSchema(v, schema, grammar.Options{Strict: true})
		if err != nil {
			return // an unsatisfiable random schema (e.g. an empty enum intersection)
		}
		s := validator(t, "fuzz", schema)
		for i := range uint64(5) {
			text, ok := walk(t, g, vocabPiece(v), rand.New(rand.NewPCG(walkSeed, i)), 80)
			if ok {
				checkValidUnder(t, s, string(schema), text)
			}
		}
	})
}

// FuzzMaskShortcuts: for random schemas (patterns, formats, bounded
// strings among them) over a real vocabulary, at every step of a random
// walk the mask equals a walk of the whole token trie. The vocabulary is
// shared by every input, so later inputs take the masks earlier ones
// shared.
func FuzzMaskShortcuts(f *testing.F) {
	fuzzMaskShortcuts(f, func(r *rand.Rand) any { return randomSchema(r, 0) })
}

// FuzzKeywordMaskShortcuts is FuzzMaskShortcuts over randomKeywordSchema
// (name classes of patternProperties, member counts, rewrites).
func FuzzKeywordMaskShortcuts(f *testing.F) {
	fuzzMaskShortcuts(f, func(r *rand.Rand) any { return randomKeywordSchema(r, 0) })
}

func fuzzMaskShortcuts(f *testing.F, draw func(*rand.Rand) any) {
	for s := range uint64(8) {
		f.Add(s, s*17)
	}
	_, v := family(f, "llama2")
	words := (v.Size() + 63) / 64
	f.Fuzz(func(t *testing.T, schemaSeed, walkSeed uint64) {
		sr := rand.New(rand.NewPCG(schemaSeed, 1))
		schema, _ := json.Marshal(draw(sr))
		g, err := grammar.CompileSchema(v, schema, grammar.Options{Strict: true})
		if err != nil {
			return
		}
		got, want := make([]uint64, words), make([]uint64, words)
		rng := rand.New(rand.NewPCG(walkSeed, 2))
		m := g.Start()
		for step := range 40 {
			clear(got)
			clear(want)
			end := m.Mask(got)
			if m.FullMask(want) != end || !slices.Equal(got, want) {
				t.Fatalf("%s step %d: the mask (%d ids) differs from the full walk (%d ids)", schema, step, count(got), count(want))
			}
			n := count(got)
			if n == 0 {
				return
			}
			if !m.Advance(nth(got, rng.IntN(n))) {
				t.Fatalf("%s: Advance refused an allowed id", schema)
			}
		}
	})
}

// randomKeywordSchema builds a schema around the keywords the rewrites
// and member classes enforce (not, if/then/else, dependencies,
// patternProperties, member counts, siblings merged into branches), with
// randomSchema's schemas inside.
func randomKeywordSchema(r *rand.Rand, depth int) any {
	leaf := func() any {
		if depth > 2 {
			return randomSchema(r, 4)
		}
		return randomKeywordSchema(r, depth+1)
	}
	names := []string{"a", "b", "ab", "x-1", "é"}
	pick := func() string { return names[r.IntN(len(names))] }
	switch r.IntN(9) {
	case 0:
		nots := []any{map[string]any{"type": []string{"string", "null", "object", "array"}[r.IntN(4)]},
			map[string]any{"required": []string{pick()}}, map[string]any{"const": []any{"a", nil, true, "ab"}[r.IntN(4)]},
			map[string]any{"minLength": r.IntN(3)}, map[string]any{"maximum": r.IntN(5)}, map[string]any{"maxProperties": r.IntN(2)},
			map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"enum": []any{"a", "b"}}}}}
		return map[string]any{"not": nots[r.IntN(len(nots))]}
	case 1:
		return map[string]any{"if": map[string]any{"properties": map[string]any{"a": map[string]any{"const": "a"}}, "required": []string{"a"}},
			"then": map[string]any{"required": []string{"b"}}, "else": map[string]any{"properties": map[string]any{"b": leaf()}},
			"type": "object", "properties": map[string]any{"a": map[string]any{"enum": []any{"a", "z"}}, "b": leaf()}}
	case 2:
		return map[string]any{"type": "object", "properties": map[string]any{"a": leaf(), "b": leaf()},
			"dependentRequired": map[string]any{"a": []string{"b"}}, "dependencies": map[string]any{"b": map[string]any{"maxProperties": 2}}}
	case 3:
		pp := map[string]any{}
		for range 1 + r.IntN(3) {
			pp[[]string{"^a", "b$", "^x-", ".*", "^[a-z]+$", "é"}[r.IntN(6)]] = leaf()
		}
		s := map[string]any{"type": "object", "patternProperties": pp}
		switch r.IntN(3) {
		case 0:
			s["additionalProperties"] = false
		case 1:
			s["additionalProperties"] = leaf()
		}
		if r.IntN(2) == 0 {
			s["properties"] = map[string]any{pick(): leaf()}
		}
		return s
	case 4:
		s := map[string]any{"type": "object", "properties": map[string]any{"a": leaf(), "b": leaf()}, "additionalProperties": r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			s["minProperties"] = r.IntN(4)
		}
		if r.IntN(2) == 0 {
			s["maxProperties"] = r.IntN(4)
		}
		return s
	case 5:
		return map[string]any{"type": "object", "properties": map[string]any{"a": leaf()}, "additionalProperties": r.IntN(2) == 0,
			"allOf": []any{map[string]any{"properties": map[string]any{pick(): leaf()}, "required": []string{pick()}}}}
	case 6:
		return map[string]any{"anyOf": []any{leaf(), leaf()}, "allOf": []any{map[string]any{"anyOf": []any{leaf(), leaf()}}}}
	case 8:
		// Branches that may overlap: made exclusive by negation, or
		// refused.
		return map[string]any{"oneOf": []any{leaf(), leaf(), map[string]any{"required": []string{pick()}}}[:2+r.IntN(2)]}
	default:
		return randomSchema(r, depth+1)
	}
}

// FuzzKeywordSchemas is FuzzRandomSchemas over randomKeywordSchema: a
// walk never dead-ends and every finished text validates.
func FuzzKeywordSchemas(f *testing.F) {
	for s := range uint64(16) {
		f.Add(s, s*13)
	}
	v := byteVocab()
	f.Fuzz(func(t *testing.T, schemaSeed, walkSeed uint64) {
		sr := rand.New(rand.NewPCG(schemaSeed, 5))
		schema, _ := json.Marshal(randomKeywordSchema(sr, 0))
		g, err := grammar.CompileSchema(v, schema, grammar.Options{Strict: true})
		if err != nil {
			return // unsatisfiable, or a negation that cannot be enforced
		}
		if bytes.Contains(schema, []byte(`"$ref"`)) && !bytes.HasPrefix(schema, []byte(`{"$defs"`)) {
			// randomSchema's recursive list below the top: its reference
			// points at nothing, which the compiler only finds where it
			// is reached (a class of names no name is in is not).
			return
		}
		s := validator(t, "fuzz", schema)
		for i := range uint64(5) {
			text, ok := walk(t, g, vocabPiece(v), rand.New(rand.NewPCG(walkSeed, i)), 80)
			if ok {
				checkValidUnder(t, s, string(schema), text)
			}
		}
	})
}
