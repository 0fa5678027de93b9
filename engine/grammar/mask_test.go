package grammar_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/internal/fixtures"
)

// TestMaskShortcutsMatchFullWalk: at every step of random walks over the
// corpus, the mask (plain tokens from precomputed bitmasks, from the
// vocabulary's shared masks, cached per state) equals a walk of the whole
// token trie from the same state, on the six real vocabularies and the
// byte vocabulary. Each schema is compiled twice, so the second grammar
// takes its masks from what the first one shared.
func TestMaskShortcutsMatchFullWalk(t *testing.T) {
	seeds, steps := 2, 100
	fams := fixtures.Families
	if testing.Short() || raceEnabled {
		seeds, steps, fams = 1, 60, []string{"llama2"} // the 32k sentencepiece vocabulary: full walks are cheaper
	}
	vocabs := map[string]*grammar.Vocabulary{"bytes": byteVocab()}
	for _, f := range fams {
		_, vocabs[f] = family(t, f)
	}
	all := corpus(t)
	for name, v := range vocabs {
		t.Run(name, func(t *testing.T) {
			for _, schema := range sortedNames(all) {
				for range 2 {
					g, err := grammar.CompileSchema(v, all[schema], grammar.Options{Strict: true})
					if err != nil {
						t.Fatal(err)
					}
					checkWalks(t, g, schema, seeds, steps)
				}
			}
		})
	}
}

// checkWalks compares Mask with FullMask along random walks under g.
func checkWalks(t *testing.T, g *grammar.Grammar, schema string, seeds, steps int) {
	t.Helper()
	words := (g.VocabSize() + 63) / 64
	got, want := make([]uint64, words), make([]uint64, words)
	n := seeds
	if g.VocabSize() > 100000 {
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

// TestMaskSharedMatchFullWalk walks the valid instances of the
// MaskBench-format corpus (unanchored patterns, every format) token by
// token over the six real vocabularies, twice, each time on fresh
// grammars, and checks every mask against the full walk: the first pass
// fills the vocabulary's shared masks, the second takes them. It also
// checks that the free-body and shared rules were used.
func TestMaskSharedMatchFullWalk(t *testing.T) {
	fams := fixtures.Families
	if testing.Short() || raceEnabled {
		fams = []string{"llama2", "qwen3"}
	}
	schemas, texts := instances(t)
	for _, f := range fams {
		t.Run(f, func(t *testing.T) {
			tok, v := family(t, f)
			words := (v.Size() + 63) / 64
			got, want := make([]uint64, words), make([]uint64, words)
			var free, shared int
			for pass := range 2 {
				for i, text := range texts {
					if (testing.Short() || raceEnabled) && !bytes.Contains(schemas[i], []byte(`"format"`)) && !bytes.Contains(schemas[i], []byte(`"pattern"`)) {
						continue
					}
					g, err := grammar.CompileSchema(v, schemas[i], grammar.Options{Strict: true})
					if err != nil {
						t.Fatal(err)
					}
					m := g.Start()
					for k, id := range tok.Encode(text) {
						clear(got)
						clear(want)
						end := m.Mask(got)
						if m.FullMask(want) != end || !slices.Equal(got, want) {
							t.Fatalf("pass %d instance %d step %d: the mask (%d ids) differs from the full walk (%d ids)", pass, i, k, count(got), count(want))
						}
						if !m.Advance(id) {
							t.Fatalf("instance %d refused at token %d", i, k)
						}
					}
					_, _, fr, _, sh := g.Rules()
					free += fr
					if pass == 1 {
						shared += sh
					}
				}
			}
			if free == 0 || shared == 0 {
				t.Errorf("free-body masks %d, shared masks in the second pass %d: want both used", free, shared)
			}
		})
	}
}

// TestMaskSharedConcurrent: grammars over one vocabulary fill and read its
// shared masks from several goroutines at once (run it with -race); every
// mask still equals the full walk.
func TestMaskSharedConcurrent(t *testing.T) {
	tok, v := family(t, "llama2")
	schemas, texts := instances(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			words := (v.Size() + 63) / 64
			got, want := make([]uint64, words), make([]uint64, words)
			for i := w; i < len(texts); i += 2 { // two workers per instance
				if !bytes.Contains(schemas[i], []byte(`"format"`)) && !bytes.Contains(schemas[i], []byte(`"pattern"`)) {
					continue
				}
				g, err := grammar.CompileSchema(v, schemas[i], grammar.Options{Strict: true})
				if err != nil {
					t.Error(err)
					return
				}
				m := g.Start()
				for k, id := range tok.Encode(texts[i]) {
					clear(got)
					clear(want)
					end := m.Mask(got)
					if m.FullMask(want) != end || !slices.Equal(got, want) {
						t.Errorf("worker %d instance %d step %d: the mask differs from the full walk", w, i, k)
						return
					}
					if !m.Advance(id) {
						t.Errorf("instance %d refused at token %d", i, k)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
