package reasoning

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSplitter checks that any chunking of any text gives the same split as
// the whole text (and, for think tags, as the reference statement of the
// rules), that pieces are never empty, that valid UTF-8 is never cut inside
// a character, and that tags never leak.
func FuzzSplitter(f *testing.F) {
	seeds := []string{
		"<think>\nplan\n</think>\n\nAnswer",
		"<think>unclosed",
		"a<thi</think><think></think>b",
		"<think>日本</think>語😀",
		"<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>y<|return|>",
		"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>",
		"<|channel|>" + strings.Repeat("0", 520) + "<|message|>x<|end|>",
	}
	for i, s := range seeds {
		f.Add(s, uint64(i), i%2 == 0, i >= 4)
	}
	f.Fuzz(func(t *testing.T, text string, seed uint64, start, harmony bool) {
		opts := []Option{WithReasoningStart(start)}
		if harmony {
			opts = append(opts, WithHarmony())
		}
		whole := Split(text, opts...)
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		s := NewSplitter(opts...)
		var pieces []Piece
		for _, c := range randomChunks(r, text) {
			pieces = s.Feed(pieces, c)
		}
		pieces = s.Flush(pieces)
		got := Collect(pieces, s.Seen())
		if got != whole {
			t.Fatalf("chunked %+v != whole %+v", got, whole)
		}
		if !harmony {
			if want := referenceSplit(text, DefaultOpen, DefaultClose, start); got != want {
				t.Fatalf("split %+v != reference %+v", got, want)
			}
			if strings.Contains(got.Content, DefaultOpen) {
				t.Fatalf("open tag leaked into content %q", got.Content)
			}
		}
		valid := utf8.ValidString(text)
		for _, p := range pieces {
			if p.Text == "" {
				t.Fatal("empty piece")
			}
			if valid && !utf8.ValidString(p.Text) {
				t.Fatalf("piece %q cuts a character", p.Text)
			}
		}
	})
}

// FuzzParseHarmonyHeader checks that no header text makes the parser panic
// and that a recipient never contains spaces or markers.
func FuzzParseHarmonyHeader(f *testing.F) {
	f.Add("<|start|>assistant to=functions.f<|channel|>commentary json")
	f.Add("<|channel|>commentary to=functions.get_weather <|constrain|>json")
	f.Add("<|start|><|channel|><|constrain|>")
	f.Fuzz(func(t *testing.T, h string) {
		got := ParseHarmonyHeader(h)
		if strings.ContainsAny(got.Recipient, " \t\n") || strings.Contains(got.Recipient, "<|") && !strings.Contains(h, got.Recipient) {
			t.Fatalf("recipient %q from %q", got.Recipient, h)
		}
	})
}
