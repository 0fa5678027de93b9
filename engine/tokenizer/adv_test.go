package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAdversarialInputs runs long runs of each kind of character (the inputs
// that expose quadratic scanning, merging or hold-back) through Encode and
// the streaming decoder of every family. It asserts correctness only; a
// regression to quadratic time shows up as this test running for minutes
// (the benchmarks measure speed).
func TestAdversarialInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const n = 1 << 14
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, n)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	inputs := map[string]string{
		"letters": strings.Repeat("a", n), "upper": strings.Repeat("A", n), "mixedcase": strings.Repeat("aA", n/2),
		"spaces": strings.Repeat(" ", n), "space-x": strings.Repeat(" x", n/2), "space-n": strings.Repeat(" n", n/2),
		"newlines": strings.Repeat("\n", n), "crlf": strings.Repeat("\r\n", n/2), "digits": strings.Repeat("1", n),
		"punct": strings.Repeat("!", n), "apostrophes": strings.Repeat("'", n), "invalid": strings.Repeat("\xff", n),
		"angles": strings.Repeat("<", n), "meta": strings.Repeat("\u2581", n/3), "cjk": strings.Repeat("中", n/3),
		"marks": strings.Repeat("\u0301", n/2), "zwj-emoji": strings.Repeat("👨\u200d👩\u200d👧", n/18),
		"random": string(random),
	}
	for _, fam := range []string{"gptoss", "qwen3", "llama2", "gemma3", "deepseek_v3", "llama3_1"} {
		tok := familyTokenizer(t, fam)
		for name, s := range inputs {
			ids := tok.Encode(s)
			d := tok.NewDecoder(false)
			var out []byte
			for _, id := range ids {
				out = d.Append(out, id)
			}
			if got, want := string(d.Flush(out)), tok.Decode(ids, false); got != want {
				t.Errorf("%s %s: stream differs from Decode", fam, name)
			}
			if fam == "gptoss" && tok.Decode(ids, false) != sanitizeUTF8(s) {
				t.Errorf("%s %s: no round trip", fam, name)
			}
		}
	}
}
