package grammar_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
)

var families struct {
	sync.Mutex
	tok   map[string]*tokenizer.Tokenizer
	vocab map[string]*grammar.Vocabulary
}

// family loads a real tokenizer and its vocabulary once per test binary.
func family(t testing.TB, name string) (*tokenizer.Tokenizer, *grammar.Vocabulary) {
	t.Helper()
	families.Lock()
	defer families.Unlock()
	if families.tok == nil {
		families.tok, families.vocab = map[string]*tokenizer.Tokenizer{}, map[string]*grammar.Vocabulary{}
	}
	if tok, ok := families.tok[name]; ok {
		return tok, families.vocab[name]
	}
	tok, err := tokenizer.Load(fixtures.TokenizerDir(t, name))
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.NewVocabulary(tok)
	if err != nil {
		t.Fatal(err)
	}
	families.tok[name], families.vocab[name] = tok, v
	return tok, v
}

// TestFamiliesWalksValidate runs random walks under every schema over the
// six real vocabularies and checks the decoded text (through the
// tokenizer's own decoder) against the independent validator.
func TestFamiliesWalksValidate(t *testing.T) {
	seeds := 5
	if testing.Short() || raceEnabled {
		seeds = 1
	}
	all := corpus(t)
	for _, fam := range fixtures.Families {
		t.Run(fam, func(t *testing.T) {
			tok, v := family(t, fam)
			c := grammar.NewCompiler(v, 0)
			for _, name := range sortedNames(all) {
				g, err := c.Schema(all[name], grammar.Options{Strict: true})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				s := validator(t, name, all[name])
				for seed := range seeds {
					rng := rand.New(rand.NewPCG(uint64(seed), 11))
					ids, ok := walkIDs(t, g, vocabPiece(v), rng, 60)
					if !ok {
						continue
					}
					text := tok.Decode(ids, true)
					if tok.Decoding().CleanUp {
						text = string(concat(v, ids))
					}
					checkValid(t, s, text)
				}
			}
		})
	}
}

func concat(v *grammar.Vocabulary, ids []int32) []byte {
	var b []byte
	for _, id := range ids {
		b = append(b, v.Piece(id)...)
	}
	return b
}
