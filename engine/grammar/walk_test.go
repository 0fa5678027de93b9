package grammar_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/prism-local/prism/engine/grammar"
)

// corpus returns the test schemas by name.
func corpus(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/schemas/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in testdata/schemas: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = b
	}
	return out
}

func sortedNames(m map[string][]byte) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// byteVocab is a vocabulary of every single byte plus tokens that straddle
// JSON boundaries and multi-byte characters, and one id (the last) with no
// piece, standing for EOS.
func byteVocab() *grammar.Vocabulary {
	var pieces [][]byte
	for b := range 256 {
		pieces = append(pieces, []byte{byte(b)})
	}
	for _, s := range []string{`",`, `"}`, `{"`, `":`, `": "`, `"]`, "\n\n", "\n  ", "  ", `true`, `null`, `false`,
		`é`, `中`, "\xe4\xb8", "\xad", `},{"`, `[{"`, `\n`, `\"`, `12`, `-0.`, `e+`, `00`, `"a`, `ab`, `20`, `-1`, `:0`} {
		pieces = append(pieces, []byte(s))
	}
	pieces = append(pieces, nil)
	return grammar.NewVocabularyFromPieces(pieces, nil)
}

// walk generates one text under g by random allowed choices. Past budget
// steps it prefers tokens that close something, so most walks end. It
// fails the test if a step allows nothing while the text cannot end.
func walk(t testing.TB, g *grammar.Grammar, pieces func(int32) []byte, rng *rand.Rand, budget int) (string, bool) {
	t.Helper()
	ids, ok := walkIDs(t, g, pieces, rng, budget)
	var text []byte
	for _, id := range ids {
		text = append(text, pieces(id)...)
	}
	return string(text), ok
}

// walkIDs is walk returning the token ids.
func walkIDs(t testing.TB, g *grammar.Grammar, pieces func(int32) []byte, rng *rand.Rand, budget int) ([]int32, bool) {
	t.Helper()
	return walkFrom(t, g.Start(), g.VocabSize(), pieces, rng, budget)
}

// walkFrom is walkIDs from a matcher already under way.
func walkFrom(t testing.TB, m *grammar.Matcher, size int, pieces func(int32) []byte, rng *rand.Rand, budget int) ([]int32, bool) {
	t.Helper()
	var ids []int32
	words := (size + 63) / 64
	mask := make([]uint64, words)
	closing := closingMask(size, pieces)
	both := make([]uint64, words)
	var text []byte
	for step := 0; step < 8*budget; step++ {
		clear(mask)
		end := m.Mask(mask)
		n := count(mask)
		if n == 0 {
			if !end {
				t.Fatalf("dead end after %q: no token allowed and the text cannot end", text)
			}
			return ids, true
		}
		if end && (rng.IntN(4) == 0 || step > budget) {
			return ids, true
		}
		pick := mask
		if step > budget {
			for i := range both {
				both[i] = mask[i] & closing[i]
			}
			if k := count(both); k > 0 {
				pick, n = both, k
			}
		}
		choice := nth(pick, rng.IntN(n))
		if !m.Advance(choice) {
			t.Fatalf("Advance refused id %d that Mask allowed, after %q", choice, text)
		}
		text = append(text, pieces(choice)...)
		ids = append(ids, choice)
	}
	return ids, false
}

// closingMask marks the tokens that close something and open nothing.
func closingMask(size int, pieces func(int32) []byte) []uint64 {
	out := make([]uint64, (size+63)/64)
	for id := range int32(size) {
		p := pieces(id)
		if bytes.ContainsAny(p, `"}]0123456789el`) && !bytes.ContainsAny(p, `[{`) {
			out[id>>6] |= 1 << (id & 63)
		}
	}
	return out
}

func count(mask []uint64) int {
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	return n
}

// nth returns the id of the k-th set bit.
func nth(mask []uint64, k int) int32 {
	for w, x := range mask {
		c := bits.OnesCount64(x)
		if k >= c {
			k -= c
			continue
		}
		for ; k > 0; k-- {
			x &= x - 1
		}
		return int32(w*64 + bits.TrailingZeros64(x))
	}
	return -1
}

func vocabPiece(v *grammar.Vocabulary) func(int32) []byte { return v.Piece }

// validator compiles schema with an independent JSON Schema library, with
// format assertions on.
func validator(t testing.TB, name string, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "byte", Validate: validateByte})
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem://" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("validator cannot compile %s: %v", name, err)
	}
	return s
}

// validateByte checks OpenAPI's "byte" format, which the validator does
// not know: canonical base64 of RFC 4648 with padding, decoded and
// encoded again by encoding/base64.
func validateByte(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return err
	}
	if base64.StdEncoding.EncodeToString(b) != s {
		return fmt.Errorf("not canonical base64: %q", s)
	}
	return nil
}

func checkValid(t testing.TB, s *jsonschema.Schema, text string) {
	t.Helper()
	if !json.Valid([]byte(text)) {
		t.Fatalf("not JSON: %q", text)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("validator cannot read %q: %v", text, err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("output %q does not validate: %v", text, err)
	}
}

func TestRandomWalksValidate(t *testing.T) {
	v := byteVocab()
	all := corpus(t)
	for _, name := range sortedNames(all) {
		schema := all[name]
		t.Run(name, func(t *testing.T) {
			g, err := grammar.CompileSchema(v, schema, grammar.Options{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			s := validator(t, name, schema)
			ended := 0
			for seed := range 200 {
				rng := rand.New(rand.NewPCG(uint64(seed), 7))
				text, ok := walk(t, g, vocabPiece(v), rng, 200)
				if !ok {
					continue
				}
				ended++
				checkValid(t, s, text)
			}
			if ended < 40 {
				t.Errorf("only %d of 200 walks ended", ended)
			}
		})
	}
}

// TestJSONModeWalks: JSON mode allows any object and nothing else.
func TestJSONModeWalks(t *testing.T) {
	v := byteVocab()
	g, err := grammar.JSONObject(v, grammar.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := validator(t, "object", []byte(`{"type":"object"}`))
	ended := 0
	for seed := range 200 {
		text, ok := walk(t, g, vocabPiece(v), rand.New(rand.NewPCG(uint64(seed), 3)), 200)
		if ok {
			ended++
			checkValid(t, s, text)
		}
	}
	if ended < 40 {
		t.Errorf("only %d of 200 walks ended", ended)
	}
	for _, bad := range []string{`[]`, `1`, `"x"`, `{"a" 1}`, `{,}`} {
		if m := g.Start(); m.AdvanceBytes([]byte(bad)) && m.CanEnd() {
			t.Errorf("JSON mode accepted %s", bad)
		}
	}
}
