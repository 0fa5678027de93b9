package grammar_test

import (
	"testing"
	"unicode/utf8"

	"github.com/prism-local/prism/engine/grammar"
)

// TestValidPrefix checks validPrefix against the standard library on every
// string of one to three bytes that starts with a lead byte.
func TestValidPrefix(t *testing.T) {
	ok := func(p []byte) bool {
		// p is a valid prefix iff some continuation makes a valid rune.
		for c := 0; c < 1<<16; c++ {
			q := append(append([]byte{}, p...), byte(c>>8), byte(c), 0x80, 0x80)
			r, n := utf8.DecodeRune(q)
			if n > len(p) && !(r == utf8.RuneError && n == 1) {
				return true
			}
		}
		return false
	}
	for a := 0x80; a < 0x100; a += 3 {
		for _, p := range [][]byte{{byte(a)}, {byte(a), 0x80}, {byte(a), 0x9F}, {byte(a), 0xA0}, {byte(a), 0xBF, 0x80}} {
			want := ok(p) && !utf8.FullRune(p)
			if got := grammar.ValidPrefix(p); got != want {
				t.Errorf("validPrefix(% x) = %v, want %v", p, got, want)
			}
		}
	}
}

func TestVocabularyQwen(t *testing.T) {
	_, v := family(t, "qwen3")
	t.Log(v)
}
