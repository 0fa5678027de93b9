package reasoning

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		text string
		opts []Option
		want Result
	}{
		{"no think", "Hello there.", nil, Result{Content: "Hello there."}},
		{"empty", "", nil, Result{}},
		{"think then answer", "<think>\nplan\n</think>\n\nAnswer", nil,
			Result{Reasoning: "\nplan\n", Content: "\n\nAnswer", HasReasoning: true}},
		{"empty think", "<think></think>Hi", nil, Result{Content: "Hi", HasReasoning: true}},
		{"unclosed think", "<think>still going", nil, Result{Reasoning: "still going", HasReasoning: true}},
		{"unclosed with partial close", "<think>abc</thi", nil, Result{Reasoning: "abc</thi", HasReasoning: true}},
		{"partial open at end", "text <thi", nil, Result{Content: "text <thi"}},
		{"lookalike tags", "a <b> <thinking> </think> c", nil, Result{Content: "a <b> <thinking> </think> c"}},
		{"two blocks", "<think>a</think>b<think>c</think>d", nil,
			Result{Reasoning: "ac", Content: "bd", HasReasoning: true}},
		{"open inside reasoning is text", "<think>x<think>y</think>z", nil,
			Result{Reasoning: "x<think>y", Content: "z", HasReasoning: true}},
		{"forced open", "plan\n</think>\n\nAnswer", []Option{WithReasoningStart(true)},
			Result{Reasoning: "plan\n", Content: "\n\nAnswer", HasReasoning: true}},
		{"forced open by prompt", "plan</think>A", []Option{WithPrompt("<｜User｜>hi<｜Assistant｜><think>\n")},
			Result{Reasoning: "plan", Content: "A", HasReasoning: true}},
		{"prompt with closed think", "A", []Option{WithPrompt("<|im_start|>assistant\n<think>\n\n</think>\n\n")},
			Result{Content: "A"}},
		{"custom tags", "[T]x[/T]y", []Option{WithTags("[T]", "[/T]")},
			Result{Reasoning: "x", Content: "y", HasReasoning: true}},
		{"unicode", "<think>日本語</think>é😀", nil, Result{Reasoning: "日本語", Content: "é😀", HasReasoning: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.opts...)
			if got != tt.want {
				t.Fatalf("Split(%q) = %+v, want %+v", tt.text, got, tt.want)
			}
			// Byte by byte must agree with the whole text.
			if got := splitChunks(bytesOf(tt.text), tt.opts...); got != tt.want {
				t.Fatalf("byte-wise split of %q = %+v, want %+v", tt.text, got, tt.want)
			}
		})
	}
}

func TestHarmony(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Result
	}{
		{"analysis then final",
			"<|channel|>analysis<|message|>User asks time.<|end|><|start|>assistant<|channel|>final<|message|>It is noon.<|return|>",
			Result{Reasoning: "User asks time.", Content: "It is noon.", HasReasoning: true}},
		{"final only", "<|channel|>final<|message|>Hi", Result{Content: "Hi"}},
		{"analysis cut off", "<|channel|>analysis<|message|>thinking", Result{Reasoning: "thinking", HasReasoning: true}},
		{"analysis header cut off", "<|channel|>analys", Result{}},
		{"tool call passes through",
			"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
			Result{Reasoning: "Need weather.", HasReasoning: true,
				Content: "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"}},
		{"preamble is content", "<|channel|>commentary<|message|>Checking.<|end|>", Result{Content: "Checking."}},
		{"plain text", "no framing at all", Result{Content: "no framing at all"}},
		{"stray markers", "a <|x|> b <|", Result{Content: "a <|x|> b <|"}},
		{"overlong header", "<|channel|>" + strings.Repeat("0", 600) + "<|message|>x",
			Result{Content: "<|channel|>" + strings.Repeat("0", 600) + "<|message|>x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, WithHarmony())
			if got != tt.want {
				t.Fatalf("Split(%q) = %+v, want %+v", tt.text, got, tt.want)
			}
			if got := splitChunks(bytesOf(tt.text), WithHarmony()); got != tt.want {
				t.Fatalf("byte-wise split = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseHarmonyHeader(t *testing.T) {
	tests := []struct {
		in   string
		want HarmonyHeader
	}{
		{"<|channel|>analysis", HarmonyHeader{Channel: "analysis"}},
		{"<|start|>assistant<|channel|>final", HarmonyHeader{Role: "assistant", Channel: "final"}},
		{"<|channel|>commentary to=functions.f <|constrain|>json",
			HarmonyHeader{Channel: "commentary", Recipient: "functions.f", Constrain: "json"}},
		{"<|start|>assistant to=functions.g<|channel|>commentary json",
			HarmonyHeader{Role: "assistant", Channel: "commentary", Recipient: "functions.g"}},
	}
	for _, tt := range tests {
		if got := ParseHarmonyHeader(tt.in); got != tt.want {
			t.Errorf("ParseHarmonyHeader(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestPromptOpensReasoning(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		opts   []Option
		want   bool
	}{
		{"qwen3 thinking prompt", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n", nil, true},
		{"qwen3 plain prompt", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", nil, false},
		{"qwen3 thinking off", "<|im_start|>assistant\n<think>\n\n</think>\n\n", nil, false},
		{"deepseek r1 forced", "<｜User｜>hi<｜Assistant｜><think>\n", nil, true},
		{"think earlier in prompt", "<|im_start|>user\nwhat is <think>?<|im_end|>\n<|im_start|>assistant\n", nil, false},
		{"harmony open analysis", "<|start|>assistant<|channel|>analysis<|message|>", []Option{WithHarmony()}, true},
		{"harmony generation prompt", "<|start|>user<|message|>hi<|end|><|start|>assistant", []Option{WithHarmony()}, false},
	}
	for _, tt := range tests {
		if got := PromptOpensReasoning(tt.prompt, tt.opts...); got != tt.want {
			t.Errorf("%s: PromptOpensReasoning = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFromOllama(t *testing.T) {
	tests := []struct {
		thinking, content string
		want              Result
	}{
		{"", "Hi", Result{Content: "Hi"}},
		{"plan", "Hi", Result{Reasoning: "plan", Content: "Hi", HasReasoning: true}},
		{"", "<think>p</think>Hi", Result{Reasoning: "p", Content: "Hi", HasReasoning: true}},
	}
	for _, tt := range tests {
		if got := FromOllama(tt.thinking, tt.content); got != tt.want {
			t.Errorf("FromOllama(%q, %q) = %+v, want %+v", tt.thinking, tt.content, got, tt.want)
		}
	}
}

func TestPiecesAreWholeCharacters(t *testing.T) {
	text := "<think>日本語の思考</think>答え😀 and é"
	s := NewSplitter()
	var pieces []Piece
	for _, c := range bytesOf(text) {
		pieces = s.Feed(pieces, c)
	}
	pieces = s.Flush(pieces)
	for _, p := range pieces {
		if p.Text == "" || !utf8.ValidString(p.Text) {
			t.Fatalf("piece %q is empty or cuts a character", p.Text)
		}
	}
}

func TestFeedAllocations(t *testing.T) {
	s := NewSplitter()
	dst := make([]Piece, 0, 8)
	chunks := []string{"Hello", " world", ", this", " is", " plain", " text <", "b> ok"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, c := range chunks {
			dst = s.Feed(dst[:0], c)
		}
	})
	if allocs != 0 {
		t.Fatalf("Feed allocated %v times per run, want 0", allocs)
	}
}

// splitChunks feeds chunks one by one and collects the result.
func splitChunks(chunks []string, opts ...Option) Result {
	s := NewSplitter(opts...)
	var pieces []Piece
	for _, c := range chunks {
		pieces = s.Feed(pieces, c)
	}
	pieces = s.Flush(pieces)
	return Collect(pieces, s.Seen())
}

func bytesOf(s string) []string {
	out := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = s[i : i+1]
	}
	return out
}

// randomChunks cuts s at random byte offsets.
func randomChunks(r *rand.Rand, s string) []string {
	var out []string
	for len(s) > 0 {
		n := 1 + r.IntN(min(len(s), 12))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// referenceSplit is a direct, non-streaming statement of the think-tag rules.
func referenceSplit(text, open, close string, start bool) Result {
	var res Result
	var r, c strings.Builder
	in := start
	res.HasReasoning = start
	for {
		tag := open
		if in {
			tag = close
		}
		i := strings.Index(text, tag)
		if i < 0 {
			break
		}
		if in {
			r.WriteString(text[:i])
		} else {
			c.WriteString(text[:i])
			res.HasReasoning = true
		}
		text = text[i+len(tag):]
		in = !in
	}
	if in {
		r.WriteString(text)
	} else {
		c.WriteString(text)
	}
	res.Reasoning, res.Content = r.String(), c.String()
	return res
}

func TestRandomChunkingMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parts := []string{"<think>", "</think>", "<", "</", "<th", "</thi", "a", "日", "😀", "\n", "<think", "think>", "<<"}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		text := b.String()
		start := r.IntN(2) == 0
		want := referenceSplit(text, DefaultOpen, DefaultClose, start)
		got := splitChunks(randomChunks(r, text), WithReasoningStart(start))
		if got != want {
			t.Fatalf("text %q start=%v: got %+v, want %+v", text, start, got, want)
		}
	}
}

func TestForTemplate(t *testing.T) {
	harmony := "{{- '<|start|>assistant<|channel|>final<|message|>' + m.content + '<|end|>' }}"
	if got := Split("<|channel|>analysis<|message|>a<|end|>", ForTemplate(harmony)...); got.Reasoning != "a" {
		t.Errorf("harmony template: %+v", got)
	}
	if got := ForTemplate("{{ '<|im_start|>assistant\n' }}"); got != nil {
		t.Errorf("qwen template: %d options", len(got))
	}
}

func TestHeld(t *testing.T) {
	s := NewSplitter()
	for _, c := range []struct {
		piece string
		held  int
	}{{"a<thi", 4}, {"nk>b</th", 4}, {"ink>", 0}, {"\xc3", 1}, {"\xa9", 0}} {
		s.Feed(nil, c.piece)
		if got := s.Held(); got != c.held {
			t.Errorf("after %q: held %d, want %d", c.piece, got, c.held)
		}
	}
	h := NewSplitter(WithHarmony())
	for _, c := range []struct {
		piece string
		held  int
	}{{"<|channel|>ana", 14}, {"lysis<|message|>x<|e", 3}, {"nd|>", 0}} {
		h.Feed(nil, c.piece)
		if got := h.Held(); got != c.held {
			t.Errorf("harmony, after %q: held %d, want %d", c.piece, got, c.held)
		}
	}
}

func TestAnswerStart(t *testing.T) {
	const qwen = `{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}{{ '<think>' }}`
	for _, c := range []struct {
		name, prompt, source string
		opts                 []Option
		open, until          string
	}{
		{"prompt opens the block", "<|im_start|>assistant\n<think>\n", qwen, nil, "", "</think>"},
		{"the model may open it", "<|im_start|>assistant\n", qwen, nil, "<think>", "</think>"},
		{"thinking turned off", "<|im_start|>assistant\n<think>\n\n</think>\n\n", qwen, nil, "", ""},
		{"no think block known", "<|start_header_id|>assistant<|end_header_id|>\n\n", "{{ messages }}", nil, "", ""},
		{"harmony", "<|start|>assistant", "", []Option{WithHarmony()}, "", "<|channel|>final<|message|>"},
		{"harmony inside analysis", "<|start|>assistant<|channel|>analysis<|message|>", "", []Option{WithHarmony()}, "", "<|channel|>final<|message|>"},
		{"harmony final opened", "<|start|>assistant<|channel|>final<|message|>", "", []Option{WithHarmony()}, "", ""},
	} {
		open, until := AnswerStart(c.prompt, c.source, c.opts...)
		if open != c.open || until != c.until {
			t.Errorf("%s: (%q, %q), want (%q, %q)", c.name, open, until, c.open, c.until)
		}
	}
}

func TestCallStart(t *testing.T) {
	h := []Option{WithHarmony()}
	if open, until := CallStart("<|start|>assistant", "", h...); open != "<|channel|>analysis<|message|>" || until != "<|end|><|start|>assistant" {
		t.Errorf("harmony: (%q, %q)", open, until)
	}
	if open, until := CallStart("<|start|>assistant<|channel|>analysis<|message|>", "", h...); open != "" || until != "<|end|><|start|>assistant" {
		t.Errorf("harmony inside analysis: (%q, %q)", open, until)
	}
	if open, until := CallStart("<|im_start|>assistant\n", "<think>"); open != "<think>" || until != "</think>" {
		t.Errorf("think tags: (%q, %q), want AnswerStart's", open, until)
	}
}
