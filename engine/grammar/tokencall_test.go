package grammar_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/tools"
)

// markedFamilies are the formats whose markers are special tokens and
// whose calls write the name outside the JSON, with the fixture tokenizer
// of each.
var markedFamilies = []struct {
	family string
	format tools.Format
}{
	{"deepseek_v3", tools.FormatDeepSeekV3},
	{"gptoss", tools.FormatHarmony},
}

// tokenID is the id of a marker token of tok.
func tokenID(t testing.TB, tok *tokenizer.Tokenizer, text string) int32 {
	t.Helper()
	id, ok := tok.TokenToID(text)
	if !ok {
		t.Fatalf("the tokenizer has no token %q", text)
	}
	return id
}

// advanceMarked moves m past text whose markers (sx.Tokens) are given as
// their tokens and the rest as bytes; false when the grammar refuses.
func advanceMarked(t testing.TB, m *grammar.Matcher, tok *tokenizer.Tokenizer, sx grammar.CallSyntax, text string) bool {
	t.Helper()
	for text != "" {
		at, which := len(text), ""
		for _, mk := range sx.Tokens {
			if i := strings.Index(text, mk); i >= 0 && (i < at || i == at && len(mk) > len(which)) {
				at, which = i, mk
			}
		}
		if at > 0 && !m.AdvanceBytes([]byte(text[:at])) {
			return false
		}
		if which == "" {
			return true
		}
		if !m.Advance(tokenID(t, tok, which)) {
			return false
		}
		text = text[at+len(which):]
	}
	return true
}

// TestMarkedCallsRequired: tool_choice "required" in the DeepSeek-V3 and
// harmony syntaxes over their real vocabularies: random walks give calls
// of the offered tools whose arguments validate, one call or several,
// from nothing or after the opening the server forces; the markers are
// their tokens only.
func TestMarkedCallsRequired(t *testing.T) {
	ts, vals := offered(t)
	seeds := 6
	if testing.Short() || raceEnabled {
		seeds = 4
	}
	for _, cf := range markedFamilies {
		for _, parallel := range []bool{false, true} {
			for _, forced := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/parallel=%v/forced=%v", cf.format, parallel, forced), func(t *testing.T) {
					tok, v := family(t, cf.family)
					sx := syntaxOf(t, cf.format)
					o := grammar.CallOptions{Syntax: sx, Parallel: parallel}
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
					if !forced {
						// The opening marker is its token, never its spelling.
						first := sx.Tokens[0]
						if cf.format == tools.FormatHarmony {
							first = reasoning.HarmonyChannel
						}
						if g.Start().AdvanceBytes([]byte(first)) {
							t.Fatalf("plain tokens may spell %q", first)
						}
						if !g.Start().Allowed(tokenID(t, tok, first)) {
							t.Fatalf("the token %q is refused", first)
						}
					}
					pieces := tokenPieces(tok)
					done := 0
					for seed := range seeds {
						rng := rand.New(rand.NewPCG(uint64(seed), 53))
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
						checkMarkerTokens(t, tok, sx, ids)
					}
					if done == 0 {
						t.Error("no walk finished")
					}
				})
			}
		}
	}
}

// checkMarkerTokens checks that the only special or added tokens of a
// walk are the syntax's markers.
func checkMarkerTokens(t *testing.T, tok *tokenizer.Tokenizer, sx grammar.CallSyntax, ids []int32) {
	t.Helper()
	for _, id := range ids {
		if !tok.IsSpecial(id) && !tok.IsAdded(id) {
			continue
		}
		p, _ := tok.Piece(id)
		if !slices.Contains(sx.Tokens, string(p)) {
			t.Fatalf("the special token %q (%d) was allowed in constrained text", p, id)
		}
	}
}

// TestMarkedCallsAuto: tool_choice "auto" in the two syntaxes: free text,
// marker tokens included, may end anywhere; plain tokens may not spell a
// marker (nor, for harmony, address a tool with "to="); once the model
// writes the trigger the call is constrained like a required one.
func TestMarkedCallsAuto(t *testing.T) {
	ts, vals := offered(t)
	seeds := 6
	if testing.Short() || raceEnabled {
		seeds = 3
	}
	free := map[tools.Format][]string{
		tools.FormatDeepSeekV3: {"<think>\nLet me look.\n</think>\n\n", "I will check <｜tool▁call▁begin｜> that.\n"},
		tools.FormatHarmony: {"<|channel|>analysis<|message|>The user wants the weather.<|end|><|start|>assistant",
			"<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant", "<|channel|>final<|message|>It is sunny."},
	}
	// Markers spelled by plain tokens, and harmony headers that address a
	// tool outside the constrained opening.
	spelled := map[tools.Format][]string{
		tools.FormatDeepSeekV3: {"<｜tool▁calls▁begin｜>", "ok <｜tool▁call▁end｜>"},
		tools.FormatHarmony:    {"<|channel|>", "hi <|call|>"},
	}
	refused := map[tools.Format][]string{
		tools.FormatHarmony: {"<|channel|>analysis to=functions.search<|message|>",
			"<|start|>assistant to=functions.search<|channel|>commentary json<|message|>", "<|channel|>commentary  to=functions.x"},
	}
	for _, cf := range markedFamilies {
		t.Run(cf.format.String(), func(t *testing.T) {
			tok, v := family(t, cf.family)
			sx := syntaxOf(t, cf.format)
			g, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx, Parallel: true, Lazy: true})
			if err != nil {
				t.Fatal(err)
			}
			if !g.Start().CanEnd() {
				t.Error("an empty answer is refused")
			}
			for _, text := range free[cf.format] {
				if m := g.Start(); !advanceMarked(t, m, tok, sx, text) || !m.CanEnd() {
					t.Errorf("free text %q refused", text)
				}
			}
			for _, text := range spelled[cf.format] {
				if g.Start().AdvanceBytes([]byte(text)) {
					t.Errorf("plain tokens may spell %q", text)
				}
			}
			for _, text := range refused[cf.format] {
				if advanceMarked(t, g.Start(), tok, sx, text) {
					t.Errorf("%q allowed in free text", text)
				}
			}
			pieces := tokenPieces(tok)
			done := 0
			for seed := range seeds {
				rng := rand.New(rand.NewPCG(uint64(seed), 59))
				m := g.Start()
				prefix := free[cf.format][0] + sx.Begin + sx.Open
				if !advanceMarked(t, m, tok, sx, prefix) {
					t.Fatalf("%q refused", prefix)
				}
				// The opening is constrained: a tool not offered is refused.
				if probe := *m; probe.AdvanceBytes([]byte("nope")) {
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

// TestMarkedCallsOrSchema: tools with a response format in the two
// syntaxes: the answer is calls or one value valid under the format.
func TestMarkedCallsOrSchema(t *testing.T) {
	ts, vals := offered(t)
	all := corpus(t)
	content := validator(t, "openai_math_reasoning", all["openai_math_reasoning"])
	seeds := 8
	if testing.Short() || raceEnabled {
		seeds = 3
	}
	for _, cf := range markedFamilies {
		t.Run(cf.format.String(), func(t *testing.T) {
			tok, v := family(t, cf.family)
			sx := syntaxOf(t, cf.format)
			g, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx, Parallel: true, Lazy: true,
				Content: all["openai_math_reasoning"], ContentParam: "response_format.json_schema.schema"})
			if err != nil {
				t.Fatal(err)
			}
			if g.Start().AdvanceBytes([]byte("Hello")) || g.Start().CanEnd() {
				t.Fatal("free text or an empty answer allowed")
			}
			if m := g.Start(); !advanceMarked(t, m, tok, sx, sx.Trigger) {
				t.Fatal("the trigger is refused")
			}
			pieces := tokenPieces(tok)
			kinds := map[bool]int{}
			for seed := range seeds {
				rng := rand.New(rand.NewPCG(uint64(seed), 61))
				ids, ok := walkFrom(t, g.Start(), g.VocabSize(), pieces, rng, 80)
				if !ok {
					continue
				}
				var text string
				for _, id := range ids {
					text += string(pieces(id))
				}
				if res := tools.Parse(cf.format, text); len(res.Calls) == 0 {
					if !strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), sx.ContentBegin) {
						t.Fatalf("%q does not open with %q", text, sx.ContentBegin)
					}
					checkValid(t, content, res.Content)
					kinds[false]++
					continue
				}
				checkCalls(t, cf.format, text, vals, true)
				kinds[true]++
			}
			t.Logf("%d answers as calls, %d as values", kinds[true], kinds[false])
		})
	}
}

// TestMarkedCallsEOSClose: a Close that ends with an EOS token (gpt-oss
// stops on <|call|>) ends the text there, so even with parallel calls
// there is one, and the grammar leaves the token to the engine's EOS.
func TestMarkedCallsEOSClose(t *testing.T) {
	ts, vals := offered(t)
	tok, v := family(t, "gptoss")
	ret := reasoning.HarmonyReturn // the fixture's eos_token
	sx := syntaxOf(t, tools.FormatHarmony)
	sx.Close = ret
	g, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx, Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	m := g.Start()
	text := sx.Open + `get_weather <|constrain|>json<|message|>{"location": "Paris", "units": "celsius"}`
	if !advanceMarked(t, m, tok, sx, text) {
		t.Fatalf("%q refused", text)
	}
	if !m.CanEnd() || m.Allowed(tokenID(t, tok, ret)) || m.Allowed(tokenID(t, tok, reasoning.HarmonyStart)) {
		t.Fatal("after the arguments the text must end (on the engine's EOS) and nothing else may follow")
	}
	checkCalls(t, tools.FormatHarmony, text, vals, false)
	sx.End = "x"
	if _, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx}); err == nil {
		t.Error("an End after an EOS Close compiled")
	}
}

// TestMarkedCallsErrors: what a marked syntax refuses at compile time.
func TestMarkedCallsErrors(t *testing.T) {
	_, v := family(t, "deepseek_v3")
	ds := syntaxOf(t, tools.FormatDeepSeekV3)
	ts, _ := offered(t)
	bad := []grammar.Tool{{Name: "two words"}}
	var se *grammar.SchemaError
	if _, err := grammar.CompileToolCalls(v, bad, grammar.CallOptions{Syntax: ds}); !errors.As(err, &se) || se.Param != "tools[0].function.name" {
		t.Errorf("a name with a space: %v", err)
	}
	harmony := syntaxOf(t, tools.FormatHarmony)
	if _, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: harmony}); err == nil || !strings.Contains(err.Error(), "has no token") {
		t.Errorf("harmony markers over the DeepSeek vocabulary: %v", err)
	}
	lazy := ds
	lazy.Trigger = "function"
	if _, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: lazy, Lazy: true}); err == nil {
		t.Error("a trigger that is not a prefix of the opening compiled")
	}
	lazy.Begin, lazy.Trigger = "x"+ds.Begin, "x"
	if _, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: lazy, Lazy: true}); err == nil {
		t.Error("a trigger that does not start with a marker compiled")
	}
	if _, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: ds, Written: "<｜tool▁calls▁begin｜>nope"}); err == nil {
		t.Error("a written text off the syntax was accepted")
	}
}

// TestMarkedCallsMaskAllocFree: once its states are built, a step of a
// harmony call — masks and advances over marker tokens, the raw name and
// the arguments — allocates nothing.
func TestMarkedCallsMaskAllocFree(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ts, _ := offered(t)
	tok, v := family(t, "gptoss")
	sx := syntaxOf(t, tools.FormatHarmony)
	g, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	text := "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant" + sx.Open +
		`get_weather <|constrain|>json<|message|>{"location": "Paris", "units": null}<|call|>`
	ids := tok.EncodeWithSpecial(text) // markers as their tokens, as a prompt is encoded
	start := *g.Start()
	mask := make([]uint64, (v.Size()+63)/64)
	run := func() {
		m := start
		for _, id := range ids {
			clear(mask)
			m.Mask(mask)
			if !m.Advance(id) {
				t.Fatalf("token %d refused", id)
			}
		}
	}
	run() // builds the states and masks
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("%v allocations per pass over %d tokens", n, len(ids))
	}
}
