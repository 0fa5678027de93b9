package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

// decode spells ids back as text (the inverse of encode's spelling).
func (e *textEncoder) decode(ids []int32) string {
	inv := map[int32]string{}
	for tok, id := range e.vocab {
		inv[id] = tok
	}
	special := map[int32]string{}
	for _, a := range e.added {
		special[a.id] = a.content
	}
	back := map[rune]byte{}
	for b, r := range byteLevelTable() {
		back[r] = byte(b)
	}
	var out []byte
	for _, id := range ids {
		if s, ok := special[id]; ok {
			if !e.byteLevel {
				s = strings.ReplaceAll(s, "▁", " ")
			}
			out = append(out, s...)
			continue
		}
		tok := inv[id]
		switch {
		case e.byteLevel:
			for _, r := range tok {
				out = append(out, back[r])
			}
		case len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">"):
			v, _ := strconv.ParseUint(tok[3:5], 16, 8)
			out = append(out, byte(v))
		default:
			out = append(out, strings.ReplaceAll(tok, "▁", " ")...)
		}
	}
	return string(out)
}

func TestEncodeRoundTripsOnRealTokenizers(t *testing.T) {
	texts := []string{
		demoScript,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>",
		"emoji 🦀, tabs\tand  double  spaces, 漢字, done.",
	}
	// One family per tokenizer style keeps this fast under -race: byte-level
	// BPE (qwen3, llama3_1, deepseek_v3) and sentencepiece with byte
	// fallback (llama2).
	for _, family := range []string{"qwen3", "llama3_1", "deepseek_v3", "llama2"} {
		t.Run(family, func(t *testing.T) {
			e, err := loadTextEncoder(fixtures.TokenizerDir(t, family))
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range texts {
				ids, err := e.encode(text)
				if err != nil {
					t.Fatalf("encode %q: %v", text, err)
				}
				if got := e.decode(ids); got != text {
					t.Fatalf("round trip:\n got %q\nwant %q", got, text)
				}
			}
		})
	}
}

func TestEncodeMatchesAddedTokensFirst(t *testing.T) {
	e := &textEncoder{
		vocab:     map[string]int32{"a": 1, "b": 2, "ab": 3, "<": 4, ">": 5, "x": 6},
		added:     []addedToken{{"<x>", 9}},
		byteLevel: true,
		maxLen:    2,
	}
	ids, err := e.encode("ab<x>ba")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Trim(strings.Join(strings.Fields(strings.Trim(fmtIDs(ids), "[]")), ","), ","), "3,9,2,1"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func fmtIDs(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(int(id)) + " ")
	}
	return b.String()
}

func FuzzEncodeRoundTrip(f *testing.F) {
	vocab := map[string]int32{}
	table := byteLevelTable()
	for b := 0; b < 256; b++ {
		vocab[string(table[b])] = int32(b)
	}
	vocab["ab"], vocab["Ġthe"] = 300, 301
	e := &textEncoder{vocab: vocab, added: []addedToken{{"<think>", 400}, {"</think>", 401}}, byteLevel: true, maxLen: 4}
	for _, s := range []string{"", "ab the", "<think>x</think>", "\xff\x00é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := e.encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.decode(ids); got != s {
			t.Fatalf("round trip of %q gave %q", s, got)
		}
	})
}
