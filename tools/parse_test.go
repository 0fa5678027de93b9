package tools

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func seqIDs(i int) string { return fmt.Sprintf("call_%d", i) }

type parseCase struct {
	name      string
	format    Format
	text      string
	content   string
	reasoning string
	calls     []Call
	warnings  int
}

func c(id int, name, args string) Call { return Call{ID: seqIDs(id), Name: name, Arguments: args} }

var parseCases = []parseCase{
	// Hermes / Qwen
	{name: "hermes plain", format: FormatHermes, text: "Hello <b>world</b> a<tool b", content: "Hello <b>world</b> a<tool b"},
	{name: "hermes call", format: FormatHermes,
		text:  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>",
		calls: []Call{c(0, "get_weather", `{"city": "Paris", "unit": "c"}`)}},
	{name: "hermes think then call", format: FormatHermes,
		text:      "<think>\nNeed the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		reasoning: "\nNeed the weather.\n",
		calls:     []Call{c(0, "get_weather", `{"city": "Paris"}`)}},
	{name: "hermes parallel", format: FormatHermes,
		text:    "Checking both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2, {\"y\": null}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
		content: "Checking both.",
		calls:   []Call{c(0, "a", `{"x": [1, 2, {"y": null}]}`), c(1, "b", `{}`)}},
	{name: "hermes arguments before name", format: FormatHermes,
		text:  `<tool_call>{"arguments": {"q": "a \"quoted\" }"}, "name": "search"}</tool_call>`,
		calls: []Call{c(0, "search", `{"q": "a \"quoted\" }"}`)}},
	{name: "hermes string arguments", format: FormatHermes,
		text:  `<tool_call>{"name": "f", "arguments": "{\"a\": 1}"}</tool_call>`,
		calls: []Call{c(0, "f", `{"a": 1}`)}},
	{name: "hermes no arguments", format: FormatHermes,
		text:    `<tool_call>{"name": "now"}</tool_call> done`,
		content: "done",
		calls:   []Call{c(0, "now", `{}`)}},
	{name: "hermes unclosed at end", format: FormatHermes,
		text:  `<tool_call>{"name": "f", "arguments": {"a": 1}}`,
		calls: []Call{c(0, "f", `{"a": 1}`)}},
	{name: "hermes invalid json", format: FormatHermes,
		text:     "<tool_call>\n{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call>",
		content:  "<tool_call>\n{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call>",
		warnings: 1},
	{name: "hermes cut off", format: FormatHermes,
		text:     `<tool_call>{"name": "f", "argu`,
		content:  `<tool_call>{"name": "f", "argu`,
		warnings: 1},
	{name: "hermes bad number", format: FormatHermes,
		text:     `<tool_call>{"name": "f", "arguments": {"a": 1.2.3}}</tool_call>`,
		content:  `<tool_call>{"name": "f", "arguments": {"a": 1.2.3}}</tool_call>`,
		warnings: 1},
	{name: "hermes unicode", format: FormatHermes,
		text:  "<tool_call>{\"name\": \"translate\", \"arguments\": {\"text\": \"日本語 😀\"}}</tool_call>",
		calls: []Call{c(0, "translate", `{"text": "日本語 😀"}`)}},
	{name: "hermes marker alone", format: FormatHermes, text: "see <tool_call>", content: "see <tool_call>", warnings: 1},

	// Llama 3.x
	{name: "llama json", format: FormatLlama3,
		text:  `{"name": "get_weather", "parameters": {"city": "Paris"}}`,
		calls: []Call{c(0, "get_weather", `{"city": "Paris"}`)}},
	{name: "llama python tag", format: FormatLlama3,
		text:  `<|python_tag|>{"name": "f", "parameters": {}}`,
		calls: []Call{c(0, "f", `{}`)}},
	{name: "llama several", format: FormatLlama3,
		text:  "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1}}",
		calls: []Call{c(0, "a", `{}`), c(1, "b", `{"x": 1}`)}},
	{name: "llama python tag with end of message", format: FormatLlama3,
		text:  `<|python_tag|>{"name": "f", "parameters": {"a": 1}}<|eom_id|>`,
		calls: []Call{c(0, "f", `{"a": 1}`)}},
	{name: "llama type first", format: FormatLlama3,
		text:  `{"type": "function", "name": "f", "parameters": {"a": true}}`,
		calls: []Call{c(0, "f", `{"a": true}`)}},
	{name: "llama plain json answer", format: FormatLlama3, text: `{"answer": 42} is the reply`, content: `{"answer": 42} is the reply`},
	{name: "llama braces in prose", format: FormatLlama3, text: "The set {1, 2} has two members.", content: "The set {1, 2} has two members."},
	{name: "llama brace not at start", format: FormatLlama3, text: `Try {"name": "f"}`, content: `Try {"name": "f"}`},
	{name: "llama builtin", format: FormatLlama3,
		text: `<|python_tag|>brave_search.call(query="x")`, content: `<|python_tag|>brave_search.call(query="x")`, warnings: 1},

	// Mistral
	{name: "mistral array", format: FormatMistral,
		text:  `[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}, "id": "abc123def"}]`,
		calls: []Call{c(0, "f", `{"a": 1}`), c(1, "g", `{}`)}},
	{name: "mistral v11", format: FormatMistral,
		text:  `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]now[ARGS]{}`,
		calls: []Call{c(0, "get_weather", `{"city": "Paris"}`), c(1, "now", `{}`)}},
	{name: "mistral content then call", format: FormatMistral,
		text:    "Sure. [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}]",
		content: "Sure.",
		calls:   []Call{c(0, "f", `{}`)}},
	{name: "mistral second call broken", format: FormatMistral,
		text:     `[TOOL_CALLS][{"name": "f", "arguments": {}}, {"name": "g", "arguments": nope}]`,
		content:  `{"name": "g", "arguments": nope}]`,
		calls:    []Call{c(0, "f", `{}`)},
		warnings: 1},

	{name: "mistral garbage after a call", format: FormatMistral,
		text:     `[TOOL_CALLS][{"name": "f", "arguments": {}}, garbage]`,
		content:  `, garbage]`,
		calls:    []Call{c(0, "f", `{}`)},
		warnings: 1},

	{name: "mistral empty list", format: FormatMistral,
		text: `[TOOL_CALLS][] ok`, content: `[TOOL_CALLS][] ok`, warnings: 1},
	{name: "mistral list of numbers", format: FormatMistral,
		text: `[TOOL_CALLS][1, 2]`, content: `[TOOL_CALLS][1, 2]`, warnings: 1},
	{name: "deepseek no calls", format: FormatDeepSeekV3,
		text: "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>", content: "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>", warnings: 1},

	// DeepSeek-V3 / R1
	{name: "deepseek v3", format: FormatDeepSeekV3,
		text: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n" +
			"<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		calls: []Call{c(0, "get_weather", `{"city": "Paris"}`), c(1, "now", `{}`)}},
	{name: "deepseek v3.1", format: FormatDeepSeekV3,
		text:  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		calls: []Call{c(0, "get_weather", `{"city": "Paris"}`)}},
	{name: "deepseek r1 think", format: FormatDeepSeekV3,
		text:      "<think>\nweather\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>w\n```json\n{\"a\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		reasoning: "\nweather\n",
		calls:     []Call{c(0, "w", `{"a": 1}`)}},
	{name: "deepseek broken args", format: FormatDeepSeekV3,
		text:     "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>w\n```json\n{oops}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		content:  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>w\n```json\n{oops}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		warnings: 1},

	// gpt-oss harmony
	{name: "harmony call", format: FormatHarmony,
		text:      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
		reasoning: "Need weather.",
		calls:     []Call{c(0, "get_weather", `{"city":"Paris"}`)}},
	{name: "harmony final", format: FormatHarmony,
		text:      "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Paris.<|return|>",
		reasoning: "Easy.", content: "Paris."},
	{name: "harmony recipient in role", format: FormatHarmony,
		text:  "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
		calls: []Call{c(0, "f", `{}`)}},
	{name: "harmony call without end token", format: FormatHarmony,
		text:  "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": [1]}",
		calls: []Call{c(0, "f", `{"a": [1]}`)}},
	{name: "harmony two calls", format: FormatHarmony,
		text: "<|channel|>commentary to=functions.a <|constrain|>json<|message|>{\"x\": 1}<|call|>" +
			"<|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{}<|call|>",
		calls: []Call{c(0, "a", `{"x": 1}`), c(1, "b", `{}`)}},
	{name: "harmony preamble then call", format: FormatHarmony,
		text: "<|channel|>commentary<|message|>Checking the weather.<|end|>" +
			"<|start|>assistant<|channel|>commentary to=functions.w <|constrain|>json<|message|>{}<|call|>",
		content: "Checking the weather.",
		calls:   []Call{c(0, "w", `{}`)}},
	{name: "harmony python tool", format: FormatHarmony,
		text:     "<|channel|>analysis to=python code<|message|>print(1)<|call|>",
		content:  "<|channel|>analysis to=python code<|message|>print(1)<|call|>",
		warnings: 1},

	// No format
	{name: "none", format: FormatNone, text: "<tool_call>{}</tool_call>", content: "<tool_call>{}</tool_call>"},
}

func TestParse(t *testing.T) {
	for _, tt := range parseCases {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.format, tt.text, WithIDs(seqIDs))
			checkResult(t, got, tt)
			// Byte by byte gives the same.
			chunks := make([]string, len(tt.text))
			for i := 0; i < len(tt.text); i++ {
				chunks[i] = tt.text[i : i+1]
			}
			checkResult(t, parseChunks(tt.format, chunks), tt)
		})
	}
}

func checkResult(t *testing.T, got Result, tt parseCase) {
	t.Helper()
	if got.Content != tt.content || got.Reasoning != tt.reasoning {
		t.Fatalf("content %q reasoning %q, want %q and %q", got.Content, got.Reasoning, tt.content, tt.reasoning)
	}
	if !reflect.DeepEqual(got.Calls, tt.calls) && !(len(got.Calls) == 0 && len(tt.calls) == 0) {
		t.Fatalf("calls %+v, want %+v", got.Calls, tt.calls)
	}
	if len(got.Warnings) != tt.warnings {
		t.Fatalf("warnings %v, want %d", got.Warnings, tt.warnings)
	}
}

func parseChunks(f Format, chunks []string) Result {
	p := NewStreamParser(f, WithIDs(seqIDs))
	var events []Event
	for _, c := range chunks {
		events = p.Feed(events, c)
	}
	events = p.Flush(events)
	r := Assemble(events, p.ReasoningSeen())
	if p.Completed() != len(r.Calls) {
		panic(fmt.Sprintf("Completed() = %d, but %d calls were assembled", p.Completed(), len(r.Calls)))
	}
	return r
}

func randomChunks(r *rand.Rand, s string) []string {
	var out []string
	for len(s) > 0 {
		n := 1 + r.IntN(min(len(s), 9))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func TestRandomChunking(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tt := range parseCases {
		for range 50 {
			got := parseChunks(tt.format, randomChunks(r, tt.text))
			checkResult(t, got, tt)
		}
	}
}

func TestStreamDeltas(t *testing.T) {
	p := NewStreamParser(FormatHermes, WithIDs(seqIDs))
	var all []Event
	for _, tok := range []string{"I'll", " check", ".\n", "<tool", "_call", ">\n{\"", "name", "\": \"", "get_weather", "\", \"", "arguments", "\": {\"", "city", "\": \"", "Paris", "\"}}\n", "</tool_call>"} {
		all = p.Feed(all, tok)
	}
	all = p.Flush(all)
	var kinds []string
	for _, e := range all {
		switch e.Kind {
		case EventContent:
			if strings.Contains(e.Text, "<") {
				t.Fatalf("content leaked a marker: %q", e.Text)
			}
			kinds = append(kinds, "content:"+e.Text)
		case EventToolCall:
			if e.Call.Name != "" {
				kinds = append(kinds, fmt.Sprintf("call:%d:%s:%s:%s", e.Call.Index, e.Call.ID, e.Call.Type, e.Call.Name))
			} else {
				kinds = append(kinds, "args:"+e.Call.Arguments)
			}
		default:
			kinds = append(kinds, e.Kind.String())
		}
	}
	want := []string{"content:I'll", "content: check", "content:.", "call:0:call_0:function:get_weather",
		`args:{"`, "args:city", `args:": "`, "args:Paris", `args:"}`}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("events\n%q\nwant\n%q", kinds, want)
	}
}

func TestWarningsAreLogged(t *testing.T) {
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	r := Parse(FormatHermes, `<tool_call>{"name": "f", "arguments": [}</tool_call>`, WithLogger(logger))
	if len(r.Warnings) != 1 || !strings.Contains(buf.String(), "tool-call text returned as content") {
		t.Fatalf("warnings %v, log %q", r.Warnings, buf.String())
	}
	if !strings.Contains(r.Content, `"arguments": [}`) {
		t.Fatalf("content %q lost the invalid call", r.Content)
	}
}

func TestInReasoning(t *testing.T) {
	p := NewStreamParser(FormatHermes)
	var states []bool
	for _, piece := range []string{"<think>", "\nhmm", "</think>", "\n\nHi"} {
		p.Feed(nil, piece)
		states = append(states, p.InReasoning())
	}
	if want := []bool{true, true, false, false}; !reflect.DeepEqual(states, want) {
		t.Errorf("in reasoning after each piece %v, want %v", states, want)
	}
}

func TestHeld(t *testing.T) {
	p := NewStreamParser(FormatHermes)
	for _, c := range []struct {
		piece string
		held  int
	}{
		{"Hi", 0},
		{" <th", 4},         // " " held as whitespace, "<th" as a possible <think>
		{"x", 0},            // not a tag: all released
		{" <tool_c", 8},     // " " and a possible opener
		{"all>\n{\"na", 17}, // in a call region: the space before it, the opener, what follows
		{"me\": \"f\", \"arguments\": {}}\n</tool_call>", 0},
		{"é"[:1], 1}, // an unfinished character
	} {
		p.Feed(nil, c.piece)
		if got := p.Held(); got != c.held {
			t.Errorf("after %q: held %d, want %d", c.piece, got, c.held)
		}
	}
}

// A possible opener cut off by a think block is content, emitted before the
// reasoning that follows it, so the events keep the order of the text.
func TestPendingOpenerBeforeReasoning(t *testing.T) {
	p := NewStreamParser(FormatHermes)
	var ev []Event
	for _, piece := range []string{"a", " <", "<think>", "x", "</think>", "b"} {
		ev = p.Feed(ev, piece)
	}
	ev = p.Flush(ev)
	var got []string
	for _, e := range ev {
		got = append(got, e.Kind.String()+":"+e.Text)
	}
	want := []string{"content:a", "content: ", "content:<", "reasoning:x", "content:b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if h := p.Held(); h != 0 {
		t.Errorf("held %d after flush", h)
	}
}
