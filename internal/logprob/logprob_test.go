package logprob

import (
	"math"
	"testing"

	"github.com/prism-local/prism/engine/enginetest"
)

func TestFinite(t *testing.T) {
	for _, c := range []struct{ in, want float32 }{
		{-0.5, -0.5},
		{0, 0},
		{float32(math.Inf(-1)), Min},
		{float32(math.NaN()), Min},
	} {
		if got := Finite(c.in); got != c.want {
			t.Errorf("Finite(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestNamesDecodeOnce(t *testing.T) {
	tok := &countingTokenizer{}
	n := NewNames(tok)
	for range 3 {
		if got := n.Of('a'); got != "a" {
			t.Fatalf("Of('a') = %q", got)
		}
	}
	if tok.calls != 1 {
		t.Errorf("decoded %d times, want once", tok.calls)
	}
}

type countingTokenizer struct {
	enginetest.ByteTokenizer
	calls int
}

func (c *countingTokenizer) Decode(ids []int32, skipSpecial bool) string {
	c.calls++
	return c.ByteTokenizer.Decode(ids, skipSpecial)
}
