package reasoning

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// plainText is tag-free prose with the odd '<' so the scan is not trivial.
func plainText(n int) string {
	const para = "The quick brown fox jumps over the lazy dog; a < b holds, and ünïcödé text flows on. "
	return strings.Repeat(para, n/len(para)+1)[:n]
}

func benchmarkChunks(b *testing.B, text string, size int, opts ...Option) {
	total := len(text)
	// Chunks end on character boundaries, as a streaming detokenizer
	// delivers them.
	var chunks []string
	for len(text) > 0 {
		n := min(size, len(text))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++
		}
		chunks = append(chunks, text[:n])
		text = text[n:]
	}
	dst := make([]Piece, 0, 16)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := NewSplitter(opts...)
		for _, c := range chunks {
			dst = s.Feed(dst[:0], c)
		}
		dst = s.Flush(dst[:0])
	}
}

// BenchmarkSplitterPlain measures tag-free text fed in 64 KiB chunks.
func BenchmarkSplitterPlain(b *testing.B) { benchmarkChunks(b, plainText(1<<20), 64<<10) }

// BenchmarkSplitterPlain4K measures tag-free text fed in 4 KiB chunks.
func BenchmarkSplitterPlain4K(b *testing.B) { benchmarkChunks(b, plainText(1<<20), 4<<10) }

// BenchmarkSplitterTokens measures tag-free text fed in token-sized (4 byte)
// chunks, as an engine stream delivers it.
func BenchmarkSplitterTokens(b *testing.B) { benchmarkChunks(b, plainText(64<<10), 4) }

// BenchmarkSplitterThinkTokens measures a think block and an answer in
// token-sized chunks.
func BenchmarkSplitterThinkTokens(b *testing.B) {
	text := "<think>\n" + plainText(32<<10) + "\n</think>\n\n" + plainText(32<<10)
	benchmarkChunks(b, text, 4)
}

// BenchmarkSplitterHarmonyTokens measures gpt-oss analysis and final
// channels in token-sized chunks.
func BenchmarkSplitterHarmonyTokens(b *testing.B) {
	text := "<|channel|>analysis<|message|>" + plainText(32<<10) + "<|end|><|start|>assistant<|channel|>final<|message|>" + plainText(32<<10)
	benchmarkChunks(b, text, 4, WithHarmony())
}
