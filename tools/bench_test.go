package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// tokenPieces cuts s into pieces of about n bytes, on character boundaries,
// the size of the text pieces a streaming detokenizer hands over per token.
func tokenPieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func benchmarkStream(b *testing.B, f Format, text string) {
	benchmarkPieces(b, f, tokenPieces(text, 4))
}

func benchmarkPieces(b *testing.B, f Format, pieces []string) {
	ids := func(int) string { return "call_x" }
	dst := make([]Event, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos()
	for b.Loop() {
		p := NewStreamParser(f, WithIDs(ids))
		for _, s := range pieces {
			dst = p.Feed(dst[:0], s)
		}
		dst = p.Flush(dst[:0])
	}
	cpu := cpuNanos() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pieces)), "ns/token")
	// CPU time per token is what the parser costs even when the machine is
	// shared and wall time includes waiting for a core.
	if cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N*len(pieces)), "cpu-ns/token")
	}
	b.ReportMetric(float64(len(pieces)), "tokens/op")
}

const benchProse = "The forecast for Paris shows mild temperatures with light winds from the west, and a chance of rain later. "

// BenchmarkStreamHermes: a Qwen3-style answer — a think block, a sentence,
// then two tool calls with nested arguments.
func BenchmarkStreamHermes(b *testing.B) {
	text := "<think>\n" + strings.Repeat(benchProse, 4) + "\n</think>\n\nLet me check both.\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": [1, 2, 3], \"detail\": {\"hourly\": true}}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Paris\"}}\n</tool_call>"
	benchmarkStream(b, FormatHermes, text)
}

// BenchmarkStreamContent: plain content with no call, in the Hermes format.
func BenchmarkStreamContent(b *testing.B) {
	benchmarkStream(b, FormatHermes, strings.Repeat(benchProse, 20))
}

// BenchmarkStreamArguments: one call with long arguments, the case where
// every token goes through the JSON scanner.
func BenchmarkStreamArguments(b *testing.B) {
	text := "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"notes.txt\", \"content\": \"" +
		strings.Repeat("Line of text with \\\"quotes\\\" and \\n escapes. ", 40) + "\"}}\n</tool_call>"
	benchmarkStream(b, FormatHermes, text)
}

// BenchmarkStreamDeepSeek: DeepSeek-R1 style think block and two calls.
func BenchmarkStreamDeepSeek(b *testing.B) {
	text := "<think>\n" + strings.Repeat(benchProse, 4) + "\n</think>\n\n" +
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\", \"days\": [1, 2]}\n```<｜tool▁call▁end｜>\n" +
		"<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"zone\": \"Europe/Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
	benchmarkStream(b, FormatDeepSeekV3, text)
}

// BenchmarkStreamHarmony: gpt-oss analysis and a commentary tool call.
func BenchmarkStreamHarmony(b *testing.B) {
	text := "<|channel|>analysis<|message|>" + strings.Repeat(benchProse, 4) + "<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\",\"days\":[1,2]}<|call|>"
	benchmarkStream(b, FormatHarmony, text)
}

// BenchmarkParseHermes: the whole-text parse of the Hermes answer.
func BenchmarkParseHermes(b *testing.B) {
	text := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	b.ReportAllocs()
	for b.Loop() {
		Parse(FormatHermes, text)
	}
}
