package grammar_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
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
	return schemasIn(t, "testdata/schemas")
}

// schemasIn returns the schemas in dir by name.
func schemasIn(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(dir + "/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", dir, err)
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
	var rest []int32 // a completion, once past twice the budget
	for step := 0; step < 8*budget; step++ {
		if step == 2*budget {
			rest = finish(m, size, pieces)
		}
		for i, id := range rest {
			if !m.Advance(id) {
				t.Fatalf("Advance refused id %d of the completion, after %q", id, text)
			}
			text = append(text, pieces(id)...)
			ids = append(ids, id)
			if i == len(rest)-1 && !m.CanEnd() {
				t.Fatalf("the completion %q cannot end", text)
			}
		}
		rest = nil
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

// finish returns one-byte tokens spelling a text that completes the
// value from m, or nil when some byte has no token of its own or the
// search grows too large. Random choices rarely spell a required member's
// name, and members may come in any order, so past the budget the walk
// writes one. The search is depth first over printable ASCII, trying the
// bytes that close something first, and never enters a state twice
// (every prefix the grammar allows can be completed, so it seldom backs
// up). It leaves out the space (whitespace is never needed) and opens at
// most k brackets, k = 0, 1, ... 3 in turn, so that it cannot lose
// itself in nested values.
func finish(m *grammar.Matcher, size int, pieces func(int32) []byte) []int32 {
	var byByte [256]int32
	for i := range byByte {
		byByte[i] = -1
	}
	for id := range int32(size) {
		if p := pieces(id); len(p) == 1 && byByte[p[0]] < 0 {
			byByte[p[0]] = id
		}
	}
	order := []byte(`}]"0`)
	for b := byte('!'); b <= '~'; b++ {
		if !bytes.ContainsRune([]byte(`}]"0 `), rune(b)) {
			order = append(order, b)
		}
	}
	for k := range 4 {
		if out, ok := finishBy(m, order, k); ok {
			var ids []int32
			for _, b := range out {
				if byByte[b] < 0 {
					return nil
				}
				ids = append(ids, byByte[b])
			}
			return ids
		}
	}
	return nil
}

// finishBy is one depth-first search of finish, trying bytes in order and
// writing at most opens brackets ('{', '[' anywhere, strings included).
func finishBy(m *grammar.Matcher, order []byte, opens int) ([]byte, bool) {
	type frame struct {
		m     grammar.Matcher
		next  int // index in order of the next byte to try
		opens int // brackets written on the way
	}
	stack := []frame{{m: *m}}
	seen := map[int32]int{m.StateID(): 0} // the fewest brackets a state was entered with
	for tries := 0; len(stack) > 0 && tries < 400000; tries++ {
		top := &stack[len(stack)-1]
		if top.m.CanEnd() {
			var out []byte
			for i := 1; i < len(stack); i++ {
				out = append(out, order[stack[i-1].next-1])
			}
			return out, true
		}
		if top.next == len(order) {
			stack = stack[:len(stack)-1]
			continue
		}
		c, b, k := top.m, order[top.next], top.opens
		top.next++
		if b == '{' || b == '[' {
			if k++; k > opens {
				continue
			}
		}
		if !c.AdvanceBytes([]byte{b}) {
			continue
		}
		if was, ok := seen[c.StateID()]; ok && was <= k {
			continue
		}
		seen[c.StateID()] = k
		stack = append(stack, frame{m: c, opens: k})
	}
	return nil, false
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
	checkValidUnder(t, s, s.Location, text)
}

// checkValidUnder is checkValid naming the schema (its text, or where it
// came from) in every failure. The validator panics on some valid
// instances (santhosh-tekuri/jsonschema v6.0.2 and v6.0.3 dereference a
// nil *big.Rat when a number's exponent is too large for big.Rat, such as
// 1e+79263476092020098728003, under any numeric keyword): that is
// reported with the schema and the instance, as a skip when the instance
// holds such a number and as a failure otherwise, never as a pass.
func checkValidUnder(t testing.TB, s *jsonschema.Schema, schema, text string) {
	t.Helper()
	if !json.Valid([]byte(text)) {
		t.Fatalf("schema %s: not JSON: %q", schema, text)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("schema %s: validator cannot read %q: %v", schema, text, err)
	}
	crash, err := validateSafely(s, v)
	switch {
	case crash != nil && unreadableNumber(text):
		t.Skipf("the validator panicked (%v) on a number it cannot read; schema %s, instance %q", crash, schema, text)
	case crash != nil:
		t.Fatalf("the validator panicked (%v); schema %s, instance %q", crash, schema, text)
	case err != nil:
		t.Fatalf("schema %s: output %q does not validate: %v", schema, text, err)
	}
}

// validateSafely runs the validator, returning its panic instead of
// dying of it.
func validateSafely(s *jsonschema.Schema, v any) (crash any, err error) {
	defer func() {
		if r := recover(); r != nil {
			crash = r
		}
	}()
	return nil, s.Validate(v)
}

// unreadableNumber reports whether text holds a number big.Rat cannot
// read (an exponent past its range), the validator's known defect.
func unreadableNumber(text string) bool {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok {
			if _, ok := new(big.Rat).SetString(string(n)); !ok {
				return true
			}
		}
	}
}

func TestRandomWalksValidate(t *testing.T) {
	randomWalks(t, corpus(t))
}

// TestKeywordWalksValidate walks the schemas of testdata/keywords, one
// per group of keywords the rewrites enforce (not, if/then/else,
// dependencies, patternProperties, member counts, merged siblings): kept
// out of the corpus, which every tokenizer family's tests walk.
func TestKeywordWalksValidate(t *testing.T) {
	randomWalks(t, schemasIn(t, "testdata/keywords"))
}

// randomWalks checks 200 random walks over each schema under the byte
// vocabulary: each finished text validates, and enough of them end.
func randomWalks(t *testing.T, all map[string][]byte) {
	t.Helper()
	v := byteVocab()
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
