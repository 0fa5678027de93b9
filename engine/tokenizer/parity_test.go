package tokenizer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prism-local/prism/internal/fixtures"
)

// Parity with the reference is proven against checked-in vectors that the
// reference itself produced: testdata/vectors/<family>.json holds, for each
// string of testdata/corpus.json, the ids transformers.js returns (with and
// without special tokens), its Decode of them (with and without skipping
// special tokens) and a hash of its Decode of every prefix; for the
// deterministic 1 MB input from bigInput it holds hashes of the ids and of
// their Decode. Tests therefore need no node. To regenerate (node and npm
// needed; the reference is installed into the cache on first use):
//
//	go test ./engine/tokenizer -run TestParity -update
var update = flag.Bool("update", false, "regenerate testdata/vectors with the reference (needs node and npm)")

// ReferencePackage is the reference implementation the vectors come from.
const ReferencePackage = "@huggingface/transformers@4.3.2"

type vectors struct {
	Reference string       `json:"reference"`
	Cases     []vectorCase `json:"cases"`
	Random    []string     `json:"random"`
	Big       *vectorBig   `json:"big"`
}

type vectorCase struct {
	IDs          []int32 `json:"ids"`
	SpecialIDs   []int32 `json:"special_ids"`
	Decoded      string  `json:"decoded"`
	DecodedSkip  string  `json:"decoded_skip"`
	PrefixSHA256 string  `json:"prefix_sha256"`
}

type vectorBig struct {
	Bytes         int    `json:"bytes"`
	NIDs          int    `json:"n_ids"`
	IDsSHA256     string `json:"ids_sha256"`
	DecodedSHA256 string `json:"decoded_sha256"`
	EncodeMS      int    `json:"encode_ms"`
}

func loadCorpus(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c []string
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// bigInput is the deterministic 1 MiB parity input: sentences built from a
// fixed word list, mixed with every corpus string, chosen by a fixed-seed
// generator and cut at a character boundary.
func bigInput(corpus []string) string {
	words := strings.Fields("the of and to in is was for on that with as by at from this it an be are or " +
		"which not but have has had were their its been also more one all new other when about into " +
		"tokenizer model engine stream decode encode parity reference vocabulary merges bytes " +
		"Prism Go ONNX runtime GPU memory budget lock template tool reasoning signal queue " +
		"running quickly carefully honest device report error request response server client")
	seed := uint64(0x9E3779B97F4A7C15)
	next := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	const size = 1 << 20
	var b strings.Builder
	for b.Len() < size {
		if next(8) == 0 {
			b.WriteString(corpus[next(len(corpus))])
			b.WriteString([]string{" ", "\n", "\n\n", "\t", ""}[next(5)])
			continue
		}
		n := 4 + next(14)
		for i := 0; i < n; i++ {
			w := words[next(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if i < n-1 {
				b.WriteString([]string{" ", " ", " ", ", ", " "}[next(5)])
			}
		}
		b.WriteString([]string{". ", ".\n", "? ", "! ", ".\n\n", "; "}[next(6)])
		if next(10) == 0 {
			fmt.Fprintf(&b, "%d ", next(100000))
		}
	}
	s := b.String()[:size]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

var (
	loadOnce  sync.Map // family -> *onceTok
	corpusMu  sync.Mutex
	bigCached string
)

type onceTok struct {
	once sync.Once
	tok  *Tokenizer
	err  error
}

// familyTokenizer loads (once per test binary) the tokenizer of a family.
func familyTokenizer(t testing.TB, fam string) *Tokenizer {
	t.Helper()
	dir := fixtures.TokenizerDir(t, fam)
	v, _ := loadOnce.LoadOrStore(fam, &onceTok{})
	o := v.(*onceTok)
	o.once.Do(func() { o.tok, o.err = Load(dir) })
	if o.err != nil {
		t.Fatalf("Load(%s): %v", fam, o.err)
	}
	return o.tok
}

func getBig(corpus []string) string {
	corpusMu.Lock()
	defer corpusMu.Unlock()
	if bigCached == "" {
		bigCached = bigInput(corpus)
	}
	return bigCached
}

func idsBytes(ids []int32) []byte {
	buf := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(id))
	}
	return buf
}

func idsSHA(ids []int32) string {
	s := sha256.Sum256(idsBytes(ids))
	return hex.EncodeToString(s[:])
}

func fnv32(b []byte) string {
	h := uint32(0x811c9dc5)
	for _, c := range b {
		h = (h ^ uint32(c)) * 0x01000193
	}
	return fmt.Sprintf("%08x", h)
}

// randomCorpus is 1500 short strings drawn by a fixed-seed generator from
// an alphabet of the characters the pre-tokenizer patterns treat specially
// (letters of every case class, marks, digits of several kinds,
// apostrophes, punctuation and symbols, every kind of whitespace, CJK,
// kana, emoji parts, special-token fragments): the reference's ids for them
// prove the scanners equal to the regexes beyond the hand-picked corpus.
func randomCorpus() []string {
	alphabet := []string{
		"a", "b", "e", "s", "t", "d", "m", "l", "v", "r", "n", "A", "S", "T", "D", "L", "V", "R", "E", "Z",
		"'", "'s", "'S", "'ll", "'Re", "n't", " ", " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\n\n",
		"\u00a0", "\u0085", "\ufeff", "\u200b", "\u200d", "\u2028", "\u3000", "\u202f", "\u000b",
		"0", "7", "42", "123", "9999", "\u0663", "\u00bd", "\u00b2", "\u2460", "\u216b", "\u0966",
		".", ",", "!", "?", "/", "-", "_", "(", ")", "[", "]", "{", "}", "<", ">", "|", "@", "#", "$", "%", "^", "&", "*", "+", "=", "~", "`", "\"", "\\",
		"\u00a9", "\u20ac", "\u2211", "\u2192", "\u00b7", "\u2014", "\u201c", "\u3001", "\u3002", "\uff01",
		"\u00e9", "\u00df", "\u00c6", "\u01c5", "\u1f88", "\u02b0", "\u00aa", "\u0301", "\u0308", "\u093f", "\u0951",
		"\u4e2d", "\u6587", "\u9fa5", "\u9fa6", "\u3042", "\u30ab", "\u30fc", "\uac00", "\u0627", "\u05d0", "\u0915", "\u0416", "\u03a9", "\u0e01",
		"\U0001F600", "\U0001F44B", "\U0001F3FD", "\U0001F1FA", "\U0001F1F8", "\u2764", "\ufe0f", "\U00020000", "\U0001D400",
		"\u2581", "<0x41>", "<|im_end|>", "<s>", "</s>", "<bos>", "<|endoftext|>", "<|begin_of_text|>", "<think>",
		"\uff5c", "\uff21", "\uff71", "\u2150",
	}
	seed := uint64(0x2545F4914F6CDD1D)
	next := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	out := make([]string, 1500)
	for i := range out {
		var b strings.Builder
		for k := 1 + next(24); k > 0; k-- {
			b.WriteString(alphabet[next(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}

func strSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// referenceModule returns the path of the reference's node entry point,
// installing it into Prism's cache when missing.
func referenceModule(t testing.TB) string {
	t.Helper()
	root, err := fixtures.CacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "tokref")
	mod := filepath.Join(dir, "node_modules", "@huggingface", "transformers", "dist", "transformers.node.mjs")
	if _, err := os.Stat(mod); err == nil {
		return mod
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"prism-tokref","private":true}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", ReferencePackage)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install %s: %v\n%s", ReferencePackage, err, out)
	}
	return mod
}

func generateVectors(t *testing.T, fam, dir string, corpus []string, big string) {
	t.Helper()
	mod := referenceModule(t)
	tmp := t.TempDir()
	bigPath := ""
	if big != "" {
		bigPath = filepath.Join(tmp, "big.txt")
		if err := os.WriteFile(bigPath, []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := json.Marshal(map[string]any{"module": mod, "dir": dir, "corpus": corpus, "random": randomCorpus(), "big": bigPath})
	reqPath := filepath.Join(tmp, "request.json")
	if err := os.WriteFile(reqPath, req, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join("testdata", "reference", "reference.mjs"), reqPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference for %s: %v\n%s", fam, err, stderr.String())
	}
	var v vectors
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("reference output: %v", err)
	}
	pretty := compactVectors(&v)
	if err := os.MkdirAll(filepath.Join("testdata", "vectors"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "vectors", fam+".json"), append(pretty, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParity compares Encode, EncodeWithSpecial, Decode and the streaming
// decoder with the reference's vectors on every family.
func TestParity(t *testing.T) {
	corpus := loadCorpus(t)
	for _, fam := range fixtures.Families {
		t.Run(fam, func(t *testing.T) {
			dir := fixtures.TokenizerDir(t, fam)
			if *update {
				generateVectors(t, fam, dir, corpus, getBig(corpus))
			}
			v := readVectors(t, fam, len(corpus))
			tok := familyTokenizer(t, fam)
			for i, text := range corpus {
				checkCase(t, tok, i, text, v.Cases[i])
			}
			checkRandom(t, tok, v.Random)
			if v.Big != nil && !testing.Short() {
				big := getBig(corpus)
				if len(big) != v.Big.Bytes {
					t.Fatalf("big input is %d bytes, vectors say %d", len(big), v.Big.Bytes)
				}
				ids := tok.Encode(big)
				if len(ids) != v.Big.NIDs || idsSHA(ids) != v.Big.IDsSHA256 {
					t.Errorf("1 MiB input: %d ids (sha %s), reference %d ids (sha %s)", len(ids), idsSHA(ids)[:12], v.Big.NIDs, v.Big.IDsSHA256[:12])
				}
				if got := tok.Decode(ids, false); strSHA(got) != v.Big.DecodedSHA256 {
					t.Errorf("1 MiB input: Decode differs from the reference")
				}
			}
		})
	}
}

// compactVectors renders vectors with one case per line: small, yet
// diffable.
func compactVectors(v *vectors) []byte {
	var b bytes.Buffer
	ref, _ := json.Marshal(v.Reference)
	fmt.Fprintf(&b, "{\"reference\": %s,\n\"cases\": [", ref)
	for i, c := range v.Cases {
		line, _ := json.Marshal(c)
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n")
		b.Write(line)
	}
	b.WriteString("\n],\n\"random\": [")
	for i, r := range v.Random {
		if i > 0 {
			b.WriteString(",")
		}
		if i%8 == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%q", r)
	}
	big, _ := json.Marshal(v.Big)
	fmt.Fprintf(&b, "\n],\n\"big\": %s}", big)
	return b.Bytes()
}

func readVectors(t *testing.T, name string, n int) *vectors {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vectors", name+".json"))
	if err != nil {
		t.Fatalf("vectors: %v (regenerate with -update)", err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) != n {
		t.Fatalf("vectors have %d cases, corpus %d strings (regenerate with -update)", len(v.Cases), n)
	}
	return &v
}

// checkRandom compares the ids and Decode of the generated strings with
// the reference's hashes of them.
func checkRandom(t *testing.T, tok *Tokenizer, want []string) {
	t.Helper()
	random := randomCorpus()
	if len(want) != len(random) {
		t.Fatalf("vectors have %d random strings, want %d (regenerate with -update)", len(want), len(random))
	}
	bad := 0
	for i, text := range random {
		ids := tok.Encode(text)
		if got := fnv32(idsBytes(ids)) + ":" + fnv32([]byte(tok.Decode(ids, false))); got != want[i] {
			if bad++; bad <= 5 {
				t.Errorf("random string %d %+q: ids/decode hash %s, reference %s (ids %v)", i, text, got, want[i], ids)
			}
		}
	}
}

func checkCase(t *testing.T, tok *Tokenizer, i int, text string, c vectorCase) {
	t.Helper()
	name := fmt.Sprintf("case %d %.40q", i, text)
	if got := tok.Encode(text); !slices.Equal(got, c.IDs) {
		t.Errorf("%s: Encode\n got %v\nwant %v", name, got, c.IDs)
		return
	}
	if got := tok.EncodeWithSpecial(text); !slices.Equal(got, c.SpecialIDs) {
		t.Errorf("%s: EncodeWithSpecial\n got %v\nwant %v", name, got, c.SpecialIDs)
	}
	if got := tok.Decode(c.IDs, false); got != c.Decoded {
		t.Errorf("%s: Decode\n got %q\nwant %q", name, got, c.Decoded)
	}
	if got := tok.Decode(c.SpecialIDs, true); got != c.DecodedSkip {
		t.Errorf("%s: Decode(skip special)\n got %q\nwant %q", name, got, c.DecodedSkip)
	}
	prefixes := make([]string, 0, len(c.IDs))
	for k := 1; k <= len(c.IDs); k++ {
		prefixes = append(prefixes, tok.Decode(c.IDs[:k], false))
	}
	if got := strSHA(strings.Join(prefixes, "\x00")); got != c.PrefixSHA256 {
		t.Errorf("%s: Decode of some prefix differs from the reference", name)
	}
	for _, skip := range []bool{false, true} {
		checkStream(t, tok, name, c.SpecialIDs, skip)
	}
}

// checkStream feeds ids one by one and checks, after every id, that what
// was emitted plus what Flush would add equals Decode of the prefix.
func checkStream(t *testing.T, tok *Tokenizer, name string, ids []int32, skip bool) {
	t.Helper()
	d := tok.NewDecoder(skip)
	var out []byte
	for k, id := range ids {
		out = d.Append(out, id)
		if !utf8.Valid(out) {
			t.Errorf("%s: stream emitted invalid UTF-8 after %d ids: %q", name, k+1, out)
			return
		}
		c := d.clone()
		full := string(c.Flush(slices.Clone(out)))
		if want := tok.Decode(ids[:k+1], skip); full != want {
			t.Errorf("%s: stream(skip=%v) after %d ids: %q + flush = %q, Decode = %q", name, skip, k+1, out, full, want)
			return
		}
	}
}

// clone copies the decoder's state (test helper).
func (d *StreamDecoder) clone() *StreamDecoder {
	c := *d
	c.ids = slices.Clone(d.ids)
	return &c
}
