package grammar_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/prism-local/prism/engine/grammar"
)

// FuzzMarkedCalls: random tools in the DeepSeek-V3 and harmony syntaxes
// over their real vocabularies — required, or auto from the opening on,
// one call or several — walked at random: at each of the first steps the
// mask equals a walk of the whole token trie, no step allows nothing
// before the text may end, and a finished text parses into calls of the
// offered tools whose arguments validate.
func FuzzMarkedCalls(f *testing.F) {
	for s := range uint64(8) {
		f.Add(s, s*13, uint8(s))
	}
	for _, cf := range markedFamilies {
		family(f, cf.family)
	}
	f.Fuzz(func(t *testing.T, schemaSeed, walkSeed uint64, mode uint8) {
		cf := markedFamilies[mode&1]
		parallel, lazy := mode&2 != 0, mode&4 != 0
		tok, v := family(t, cf.family)
		sx := syntaxOf(t, cf.format)
		sr := rand.New(rand.NewPCG(schemaSeed, 5))
		var ts []grammar.Tool
		for i := range 1 + sr.IntN(3) {
			schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"a": randomSchema(sr, 1)},
				"required": []string{"a"}, "additionalProperties": false})
			ts = append(ts, grammar.Tool{Name: fmt.Sprintf("tool_%d", i), Parameters: schema, Strict: true})
		}
		g, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx, Parallel: parallel, Lazy: lazy})
		if err != nil {
			return // an unsatisfiable random schema, or a reference the nesting broke
		}
		vals := map[string]*jsonschema.Schema{}
		for _, tl := range ts {
			vals[tl.Name] = validator(t, tl.Name, tl.Parameters)
		}
		m := g.Start()
		prefix := ""
		if lazy {
			prefix = sx.Begin + sx.Open
			if !advanceMarked(t, m, tok, sx, prefix) {
				t.Fatalf("the opening %q is refused", prefix)
			}
		}
		words := (v.Size() + 63) / 64
		got, want := make([]uint64, words), make([]uint64, words)
		rng := rand.New(rand.NewPCG(walkSeed, 6))
		pieces := tokenPieces(tok)
		text := prefix
		for step := range 30 {
			clear(got)
			clear(want)
			end := m.Mask(got)
			if m.FullMask(want) != end || !slices.Equal(got, want) {
				t.Fatalf("%s step %d after %q: the mask (%d ids) differs from the full walk (%d ids)", cf.format, step, text, count(got), count(want))
			}
			n := count(got)
			if n == 0 {
				if !end {
					t.Fatalf("dead end after %q", text)
				}
				break
			}
			id := nth(got, rng.IntN(n))
			if !m.Advance(id) {
				t.Fatalf("Advance refused an allowed id after %q", text)
			}
			text += string(pieces(id))
		}
		ids, ok := walkFrom(t, m, g.VocabSize(), pieces, rng, 80)
		if !ok {
			return
		}
		for _, id := range ids {
			text += string(pieces(id))
		}
		checkCalls(t, cf.format, text, vals, parallel)
	})
}
