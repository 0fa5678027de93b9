package grammar_test

import (
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
		return s
	case 4:
		return map[string]any{"type": "string", "pattern": []string{"^[a-c]+$", "x", "^(ab|cd)*$", "^\\d{2,3}-[A-Z]?$", "é."}[r.IntN(5)]}
	case 5:
		return map[string]any{"type": "string", "format": []string{"date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri", "uri-reference", "byte"}[r.IntN(12)]}
	case 6:
		lo := r.IntN(200) - 100
		return map[string]any{"type": []string{"integer", "number"}[r.IntN(2)], "minimum": lo, "exclusiveMaximum": lo + 1 + r.IntN(300)}
	case 7:
		return map[string]any{"enum": []any{"a", 1, nil, []any{true}, map[string]any{"k": "v"}}[:1+r.IntN(5)]}
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
				checkValid(t, s, text)
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
	for s := range uint64(8) {
		f.Add(s, s*17)
	}
	_, v := family(f, "llama2")
	words := (v.Size() + 63) / 64
	f.Fuzz(func(t *testing.T, schemaSeed, walkSeed uint64) {
		sr := rand.New(rand.NewPCG(schemaSeed, 1))
		schema, _ := json.Marshal(randomSchema(sr, 0))
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
