package grammar_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/tools"
)

// callFamilies pairs each tool-call format with a fixture tokenizer that
// writes it.
var callFamilies = []struct {
	family string
	format tools.Format
}{
	{"qwen3", tools.FormatHermes},
	{"llama3_1", tools.FormatLlama3},
	{"llama2", tools.FormatMistral},
}

func syntaxOf(t testing.TB, f tools.Format) grammar.CallSyntax {
	t.Helper()
	s, ok := f.Syntax()
	if !ok {
		t.Fatalf("%s has no call syntax", f)
	}
	return grammar.CallSyntax{Trigger: s.Trigger, Begin: s.Begin, End: s.End, Open: s.Open, Close: s.Close,
		Sep: s.Sep, ArgsKey: s.ArgsKey, WholeAnswer: s.WholeAnswer, Tokens: s.Tokens, NameEnd: s.NameEnd, Guard: s.Guard, ContentBegin: s.ContentBegin}
}

// offered is two tools with real parameter schemas and their validators.
func offered(t testing.TB) ([]grammar.Tool, map[string]*jsonschema.Schema) {
	all := corpus(t)
	ts := []grammar.Tool{
		{Name: "search", Parameters: all["tool_search"], Strict: true},
		{Name: "get_weather", Parameters: all["openai_weather"], Strict: true},
	}
	return ts, map[string]*jsonschema.Schema{
		"search":      validator(t, "tool_search", all["tool_search"]),
		"get_weather": validator(t, "openai_weather", all["openai_weather"]),
	}
}

// tokenPieces gives every id's text, special and added tokens included.
func tokenPieces(tok *tokenizer.Tokenizer) func(int32) []byte {
	return func(id int32) []byte {
		p, _ := tok.Piece(id)
		return p
	}
}

// checkCalls parses text as the format does and checks every call: an
// offered tool, arguments valid for its schema, and the number of calls.
func checkCalls(t *testing.T, f tools.Format, text string, vals map[string]*jsonschema.Schema, parallel bool) {
	t.Helper()
	res := tools.Parse(f, text)
	if len(res.Warnings) > 0 {
		t.Fatalf("%q: parser warnings %v", text, res.Warnings)
	}
	if len(res.Calls) == 0 || !parallel && len(res.Calls) != 1 {
		t.Fatalf("%q parsed as %d calls (parallel %v)", text, len(res.Calls), parallel)
	}
	for _, c := range res.Calls {
		s, ok := vals[c.Name]
		if !ok {
			t.Fatalf("%q: call of %q, not an offered tool", text, c.Name)
		}
		checkValid(t, s, c.Arguments)
	}
}

// TestToolCallsRequired: tool_choice "required" (and named, with one
// tool) through the grammar: random walks over the real vocabularies give
// calls of the offered tools whose arguments validate, one call without
// parallel calls and one or more with, starting after the opening the
// server forces (CallOptions.Written) or from nothing.
func TestToolCallsRequired(t *testing.T) {
	ts, vals := offered(t)
	seeds := 6
	if testing.Short() || raceEnabled {
		seeds = 4 // fewer walks than this may all run out of budget in free strings
	}
	for _, cf := range callFamilies {
		for _, parallel := range []bool{false, true} {
			for _, forced := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/parallel=%v/forced=%v", cf.format, parallel, forced), func(t *testing.T) {
					tok, v := family(t, cf.family)
					o := grammar.CallOptions{Syntax: syntaxOf(t, cf.format), Parallel: parallel}
					written := ""
					if forced {
						n, err := tools.Narrow([]byte(`"required"`), toolDefs(t, ts), cf.format)
						if err != nil {
							t.Fatal(err)
						}
						written, o.Written = n.Forced, n.Forced
					}
					g, err := grammar.CompileToolCalls(v, ts, o)
					if err != nil {
						t.Fatal(err)
					}
					if g.Start().AdvanceBytes([]byte("Sure")) || g.Start().CanEnd() {
						t.Fatal("a required call allows text or an empty answer")
					}
					pieces := tokenPieces(tok)
					done := 0
					for seed := range seeds {
						rng := rand.New(rand.NewPCG(uint64(seed), 31))
						ids, ok := walkFrom(t, g.Start(), g.VocabSize(), pieces, rng, 80)
						if !ok {
							continue
						}
						done++
						text := written
						for _, id := range ids {
							text += string(pieces(id))
						}
						checkCalls(t, cf.format, text, vals, parallel)
					}
					if done == 0 {
						t.Error("no walk finished")
					}
				})
			}
		}
	}
}

// TestToolCallsAuto: tool_choice "auto" is a lazy grammar: free text,
// special tokens included, until the model opens a call; from the opening
// on the call is constrained like a required one. The text may also end
// without a call.
func TestToolCallsAuto(t *testing.T) {
	ts, vals := offered(t)
	seeds := 6
	if testing.Short() || raceEnabled {
		seeds = 2
	}
	for _, cf := range callFamilies {
		t.Run(cf.format.String(), func(t *testing.T) {
			tok, v := family(t, cf.family)
			sx := syntaxOf(t, cf.format)
			g, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx, Parallel: true, Lazy: true})
			if err != nil {
				t.Fatal(err)
			}
			m := g.Start()
			if !m.CanEnd() {
				t.Error("an empty answer is refused")
			}
			free := "Let me look that up.\n"
			if sx.WholeAnswer {
				// A Llama 3 answer is text or calls: text may hold braces later on.
				if !m.AdvanceBytes([]byte(free+"{not a call}")) || !m.CanEnd() {
					t.Error("free text refused")
				}
				if g.Start().AdvanceBytes([]byte(`  {"nam`)) != true || g.Start().AdvanceBytes([]byte(`{"x"`)) {
					t.Error("an answer opening with { must be a call")
				}
				free = ""
			} else if !m.AdvanceBytes([]byte(free+"{\"name\": \"nope\"} and [brackets]")) || !m.CanEnd() {
				t.Error("free text refused")
			}
			pieces := tokenPieces(tok)
			done := 0
			for seed := range seeds {
				rng := rand.New(rand.NewPCG(uint64(seed), 37))
				m := g.Start()
				prefix := free + sx.Trigger
				if sx.WholeAnswer {
					prefix = "{"
				}
				if !m.AdvanceBytes([]byte(prefix)) {
					t.Fatalf("%q refused", prefix)
				}
				// The opening is constrained: a wrong tool name is refused.
				probe := *m
				if probe.AdvanceBytes([]byte(`{"name": "nope"`)) || probe.AdvanceBytes([]byte(`[{"name": "nope"`)) {
					t.Fatal("a call of a tool not offered is allowed")
				}
				ids, ok := walkFrom(t, m, g.VocabSize(), pieces, rng, 80)
				if !ok {
					continue
				}
				done++
				text := prefix
				for _, id := range ids {
					text += string(pieces(id))
				}
				checkCalls(t, cf.format, text, vals, true)
			}
			if done == 0 {
				t.Error("no walk finished")
			}
		})
	}
}

func toolDefs(t testing.TB, ts []grammar.Tool) []json.RawMessage {
	var out []json.RawMessage
	for _, tl := range ts {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"type":"function","function":{"name":%q,"parameters":%s}}`, tl.Name, tl.Parameters)))
	}
	return out
}

// TestToolCallsOrSchema: tools together with a response format: the answer
// is either calls of the offered tools or one JSON value valid under the
// format's schema, never free text.
func TestToolCallsOrSchema(t *testing.T) {
	ts, vals := offered(t)
	all := corpus(t)
	content := validator(t, "openai_math_reasoning", all["openai_math_reasoning"])
	seeds := 8
	if testing.Short() || raceEnabled {
		seeds = 3
	}
	for _, cf := range callFamilies {
		t.Run(cf.format.String(), func(t *testing.T) {
			tok, v := family(t, cf.family)
			g, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: syntaxOf(t, cf.format), Parallel: true, Lazy: true,
				Content: all["openai_math_reasoning"], ContentParam: "response_format.json_schema.schema"})
			if err != nil {
				t.Fatal(err)
			}
			if g.Start().AdvanceBytes([]byte("Hello")) || g.Start().CanEnd() {
				t.Fatal("free text or an empty answer allowed")
			}
			pieces := tokenPieces(tok)
			kinds := map[bool]int{}
			for seed := range seeds {
				rng := rand.New(rand.NewPCG(uint64(seed), 41))
				ids, ok := walkFrom(t, g.Start(), g.VocabSize(), pieces, rng, 80)
				if !ok {
					continue
				}
				var text string
				for _, id := range ids {
					text += string(pieces(id))
				}
				res := tools.Parse(cf.format, text)
				if len(res.Calls) == 0 {
					checkValid(t, content, text)
					kinds[false]++
					continue
				}
				checkCalls(t, cf.format, text, vals, true)
				kinds[true]++
			}
			t.Logf("%d answers as calls, %d as values", kinds[true], kinds[false])
		})
	}
	if _, err := grammar.CompileToolCalls(byteVocab(), ts, grammar.CallOptions{Syntax: syntaxOf(t, tools.FormatHermes), Lazy: true,
		Content: []byte(`{"type":"string","$dynamicRef":"#node"}`), ContentParam: "response_format.json_schema.schema"}); err == nil {
		t.Error("an unsupported keyword in the content schema compiled")
	} else if se, ok := err.(*grammar.SchemaError); !ok || se.Param != "response_format.json_schema.schema" || se.Keyword != "$dynamicRef" {
		t.Errorf("error %#v", err)
	}
}
