package grammar_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
)

// TestMaskShortcutsMatchFullWalk: at every step of random walks over the
// corpus, the mask (plain tokens from precomputed bitmasks, cached per
// state) equals a walk of the whole token trie from the same state, on a
// byte-level BPE vocabulary, a sentencepiece one and the byte vocabulary.
func TestMaskShortcutsMatchFullWalk(t *testing.T) {
	seeds, steps := 2, 100
	fams := []string{"qwen3", "llama2"}
	if testing.Short() || raceEnabled {
		seeds, steps, fams = 1, 60, fams[1:] // the 32k sentencepiece vocabulary: full walks are cheaper
	}
	vocabs := map[string]*grammar.Vocabulary{"bytes": byteVocab()}
	for _, f := range fams {
		_, vocabs[f] = family(t, f)
	}
	all := corpus(t)
	for name, v := range vocabs {
		t.Run(name, func(t *testing.T) {
			words := (v.Size() + 63) / 64
			got, want := make([]uint64, words), make([]uint64, words)
			for _, schema := range sortedNames(all) {
				g, err := grammar.CompileSchema(v, all[schema], grammar.Options{Strict: true})
				if err != nil {
					t.Fatal(err)
				}
				n := seeds
				if v.Size() > 100000 {
					n = 1 // a full walk of a 150k vocabulary costs milliseconds
				}
				for seed := range n {
					rng := rand.New(rand.NewPCG(uint64(seed), 23))
					m := g.Start()
					for step := 0; step < steps; step++ {
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
			}
		})
	}
}
