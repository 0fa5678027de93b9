package prism

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/tools"
)

// replay runs pieces through the parser and a trail as a chat answer does
// (forced text first) and returns the content and the entries.
func replay(forced string, pieces []string) (string, []string) {
	p := tools.NewStreamParser(tools.FormatHermes, tools.WithReasoning(reasoning.WithPrompt("")))
	tr := newTrail(enginetest.ByteTokenizer{}, forced)
	var all, ev []tools.Event
	if forced != "" {
		ev = p.Feed(ev, forced)
		all = append(all, ev...)
	}
	tr.match(ev, p.Held())
	for _, pc := range pieces {
		tr.push(engine.Token{Piece: []byte(pc), Logprob: -1})
		ev = p.Feed(ev[:0], pc)
		all = append(all, ev...)
		tr.match(ev, p.Held())
	}
	ev = p.Flush(ev[:0])
	all = append(all, ev...)
	tr.match(ev, p.Held())
	tr.finish()
	var toks []string
	for _, e := range tr.take() {
		toks = append(toks, e.Token)
	}
	return tools.Assemble(all, p.ReasoningSeen()).Content, toks
}

func TestTrailAttributesContentToItsTokens(t *testing.T) {
	cases := []struct {
		name   string
		forced string
		pieces []string
		want   []string // the entries' tokens
	}{
		{"plain", "", []string{"Hel", "lo", " world"}, []string{"Hel", "lo", " world"}},
		{"think block then short content", "", []string{"<think>", "in", "</think>", "in"}, []string{"in"}},
		{"content that also occurs in the tag before it", "", []string{"<think>", "x", "</think>", "th", "ink"}, []string{"th", "ink"}},
		{"a character over two tokens", "", []string{"a", "", "é", "b"}, []string{"a", "", "é", "b"}},
		{"a trailing token without text is not reported", "", []string{"ok", ""}, []string{"ok"}},
		{"whitespace before a call is dropped", "", []string{"Hi", " ", "<tool_call>", `{"name": "f", "arguments": {}}`, "</tool_call>"}, []string{"Hi"}},
		{"a token split by the parser is one entry", "", []string{"Hi \n", "<tool_call>", `{"name": "f", "arguments": {}}`, "</tool_call>"}, []string{"Hi"}},
		{"held tag prefix released", "", []string{"a<", "<", "b"}, []string{"a<", "<", "b"}},
		{"content also in the held tail", "", []string{"0", "t<t", "<", "0"}, []string{"0", "t<t", "<", "0"}},
		{"forced text has no entries", "<tool_call>\n", []string{"oops", " not json"}, []string{"oops", " not json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			content, toks := replay(c.forced, c.pieces)
			if strings.Join(toks, "") != strings.TrimPrefix(content, c.forced) && !strings.HasSuffix(content, strings.Join(toks, "")) {
				t.Errorf("entries %q, content %q", toks, content)
			}
			if strings.Join(toks, "|") != strings.Join(c.want, "|") {
				t.Errorf("entries %q, want %q (content %q)", toks, c.want, content)
			}
		})
	}
}

// FuzzTrail: whatever the text and however it is cut into tokens, the
// entries spell the content, minus any forced text in front of it.
func FuzzTrail(f *testing.F) {
	f.Add("<think>in</think>in", []byte{2, 3, 1})
	f.Add("Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call> bye", []byte{1, 4, 9, 2, 0, 3})
	f.Add("a<<b <think", []byte{1, 1, 1, 0, 2})
	f.Add("é</think>x\n\n<tool_call>{}", []byte{1, 0, 1, 5, 1})
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		if !utf8.ValidString(text) {
			return
		}
		var pieces []string
		for i := 0; len(text) > 0; i++ {
			n := 1
			if len(cuts) > 0 {
				n = int(cuts[i%len(cuts)] % 8)
			}
			if n == 0 { // a token that shows no text
				pieces = append(pieces, "")
				n = 1
			}
			n = min(n, len(text))
			for n < len(text) && !utf8.RuneStart(text[n]) {
				n++
			}
			pieces = append(pieces, text[:n])
			text = text[n:]
		}
		content, toks := replay("", pieces)
		if got := strings.Join(toks, ""); got != content {
			t.Fatalf("pieces %q: entries %q spell %q, content %q", pieces, toks, got, content)
		}
	})
}
