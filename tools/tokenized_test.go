package tools

import (
	"reflect"
	"testing"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
)

// realPieces encodes text with a family's real tokenizer and decodes it back
// token by token, special tokens kept, as the engine streams it.
func realPieces(tb testing.TB, family, text string) []string {
	tb.Helper()
	tok, err := tokenizer.Load(fixtures.TokenizerDir(tb, family))
	if err != nil {
		tb.Fatal(err)
	}
	ids := tok.EncodeWithSpecial(text)
	dec := tok.NewDecoder(false)
	pieces := make([]string, 0, len(ids)+1)
	for _, id := range ids {
		pieces = append(pieces, string(dec.Append(nil, id)))
	}
	if rest := dec.Flush(nil); len(rest) > 0 {
		pieces = append(pieces, string(rest))
	}
	return pieces
}

var realAnswers = []struct {
	family string
	format Format
	text   string
}{
	{"qwen3", FormatHermes, "<think>\nThe user wants the weather in Paris and the time there. I should call both tools.\n</think>\n\n" +
		"I'll check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": [1, 2]}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Paris\"}}\n</tool_call>"},
	{"deepseek_v3", FormatDeepSeekV3, "<think>\nThe user wants the weather in Paris and the time there. I should call both tools.\n</think>\n\n" +
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": [1, 2]}\n```<｜tool▁call▁end｜>\n" +
		"<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"zone\": \"Europe/Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
	{"gptoss", FormatHarmony, "<|channel|>analysis<|message|>The user wants the weather in Paris. I should call the tool.<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\",\"unit\":\"celsius\",\"days\":[1,2]}<|call|>"},
}

// TestRealTokenStreams streams answers cut by each family's real tokenizer
// and checks the result equals the whole-text parse, with calls found.
func TestRealTokenStreams(t *testing.T) {
	for _, a := range realAnswers {
		t.Run(a.family, func(t *testing.T) {
			pieces := realPieces(t, a.family, a.text)
			if len(pieces) < 20 {
				t.Fatalf("only %d pieces", len(pieces))
			}
			got := parseChunks(a.format, pieces)
			want := Parse(a.format, a.text, WithIDs(seqIDs))
			if !reflect.DeepEqual(normal(got), normal(want)) || len(want.Calls) == 0 || want.Content != "\n\nI'll check both." && a.format == FormatHermes {
				t.Fatalf("streamed %+v\nwhole %+v", got, want)
			}
			if len(want.Warnings) > 0 || !want.HasReasoning {
				t.Fatalf("whole %+v", want)
			}
		})
	}
}

// BenchmarkRealTokens parses answers cut by the families' real tokenizers.
func BenchmarkRealTokens(b *testing.B) {
	for _, a := range realAnswers {
		b.Run(a.family, func(b *testing.B) {
			benchmarkPieces(b, a.format, realPieces(b, a.family, a.text))
		})
	}
}
