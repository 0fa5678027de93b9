package grammar_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
)

// charRunSchemas are bounded strings whose first characters may be any
// plain character but a few (or any at all), with multi-byte and astral
// exclusions, DEL, the quote and the backslash, bounds that end the string
// at different counts, and bounded strings inside arrays and objects.
var charRunSchemas = []string{
	`{"type":"string","pattern":"^[^x]*$","minLength":2,"maxLength":3}`,
	`{"type":"string","pattern":"[^ ]","maxLength":8}`,
	`{"type":"string","pattern":"^[^é]*$","maxLength":5}`,
	`{"type":"string","pattern":"^[^😀]{1,5}$"}`,
	`{"type":"string","pattern":"^[^\"\\\\]*$","maxLength":6}`,
	`{"type":"string","pattern":"^[^\u007f]*$","minLength":1,"maxLength":4}`,
	`{"type":"string","pattern":"^[^ab]*a?$","maxLength":7}`,
	`{"type":"string","pattern":"^.*x$","minLength":3,"maxLength":10}`,
	`{"type":"string","pattern":"^[^0-9]*[0-9]$","maxLength":9}`,
	`{"type":"string","minLength":4,"maxLength":30}`,
	`{"type":"array","items":{"type":"string","pattern":"[^,]","maxLength":4},"maxItems":3}`,
	`{"type":"object","properties":{"a":{"type":"string","pattern":"^[^x]+$","maxLength":12},"b":{"type":"string","pattern":"[^ ]","minLength":2,"maxLength":5}},"required":["a","b"],"additionalProperties":false}`,
}

// TestCharRunMatchFullWalk: along random walks under bounded strings, on
// the Qwen3 and Llama 3.1 vocabularies, every mask (charRun's among them)
// equals the walk of the whole token trie from the same state, and the
// rule was used. Each schema is compiled twice: the second grammar takes
// what the first stored in the vocabulary's shared masks.
func TestCharRunMatchFullWalk(t *testing.T) {
	seeds, steps := 4, 40
	if testing.Short() || raceEnabled {
		seeds, steps = 1, 20
	}
	for _, f := range []string{"qwen3", "llama3_1"} {
		t.Run(f, func(t *testing.T) {
			_, v := family(t, f)
			words := (v.Size() + 63) / 64
			got, want := make([]uint64, words), make([]uint64, words)
			runs := 0
			for _, schema := range charRunSchemas {
				for range 2 {
					g, err := grammar.CompileSchema(v, []byte(schema), grammar.Options{Strict: true})
					if err != nil {
						t.Fatalf("%s: %v", schema, err)
					}
					for seed := range seeds {
						rng := rand.New(rand.NewPCG(uint64(seed), 41))
						m := g.Start()
						for step := range steps {
							clear(got)
							clear(want)
							end := m.Mask(got)
							if m.FullMask(want) != end || !slices.Equal(got, want) {
								t.Fatalf("%s seed %d step %d: the mask (%d ids) differs from the full walk (%d ids)", schema, seed, step, count(got), count(want))
							}
							n := count(got)
							if n == 0 {
								break
							}
							if !m.Advance(nth(got, rng.IntN(n))) {
								t.Fatalf("%s: Advance refused an allowed id", schema)
							}
						}
					}
					runs += g.CharRuns()
				}
			}
			if runs == 0 {
				t.Error("no mask was computed from a character run")
			}
		})
	}
}

// TestCharRunInstances walks the valid instances of the MaskBench-format
// corpus token by token on the Qwen3 and Llama 3.1 vocabularies and checks
// that the character-run rule was used and agreed with the full walk at
// every step where it was.
func TestCharRunInstances(t *testing.T) {
	schemas, texts := instances(t)
	for _, f := range []string{"qwen3", "llama3_1"} {
		t.Run(f, func(t *testing.T) {
			tok, v := family(t, f)
			words := (v.Size() + 63) / 64
			got, want := make([]uint64, words), make([]uint64, words)
			runs := 0
			for i, text := range texts {
				g, err := grammar.CompileSchema(v, schemas[i], grammar.Options{Strict: true})
				if err != nil {
					t.Fatal(err)
				}
				m := g.Start()
				for k, id := range tok.Encode(text) {
					before := g.CharRuns()
					clear(got)
					end := m.Mask(got)
					if g.CharRuns() > before {
						clear(want)
						if m.FullMask(want) != end || !slices.Equal(got, want) {
							t.Fatalf("instance %d step %d: the mask (%d ids) differs from the full walk (%d ids)", i, k, count(got), count(want))
						}
					}
					if !m.Advance(id) {
						t.Fatalf("instance %d refused at token %d", i, k)
					}
				}
				runs += g.CharRuns()
			}
			if runs == 0 {
				t.Error("no mask was computed from a character run")
			}
		})
	}
}
