package grammar_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/tools"
)

// TestNamedToolCall: tool_choice names a tool, the tools package forces the
// call's opening, and the grammar constrains the arguments to the tool's
// parameters schema and then the format's closing (Options.Suffix). The
// whole text parses as one call to that tool whose arguments validate.
func TestNamedToolCall(t *testing.T) {
	params := corpus(t)["tool_search"]
	tool, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": "search", "parameters": json.RawMessage(params)}})
	choice := json.RawMessage(`{"type":"function","function":{"name":"search"}}`)
	cases := []struct {
		family string
		format tools.Format
		suffix string
	}{
		{"qwen3", tools.FormatHermes, "}\n</tool_call>"},
		{"llama3_1", tools.FormatLlama3, "}"},
		{"llama2", tools.FormatMistral, "}]"},
	}
	s := validator(t, "tool_search", params)
	for _, c := range cases {
		t.Run(c.format.String(), func(t *testing.T) {
			tok, v := family(t, c.family)
			n, err := tools.Narrow(choice, []json.RawMessage{tool}, c.format)
			if err != nil || n.Forced == "" {
				t.Fatalf("narrow: %v (forced %q)", err, n.Forced)
			}
			g, err := grammar.CompileSchema(v, params, grammar.Options{Strict: true, Param: "tools", Suffix: c.suffix})
			if err != nil {
				t.Fatal(err)
			}
			b := enginetest.NewBackend("", 8192)
			b.ModelInfo.VocabSize, b.ModelInfo.EOS = tok.VocabSize(), tok.EOS()
			b.Logits = noise
			e, err := engine.New(b, realTokenizer{tok}, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			done := 0
			seeds := int64(4)
			if testing.Short() || raceEnabled {
				seeds = 2
			}
			for seed := range seeds {
				text, res, err := e.Generate(t.Context(), engine.Request{Prompt: "Search.\n" + n.Forced, MaxTokens: 400, Temperature: 1, Seed: &seed, Constraint: g})
				if err != nil {
					t.Fatal(err)
				}
				if res.FinishReason != engine.FinishStop {
					continue
				}
				done++
				got := tools.Parse(c.format, n.Forced+text)
				if len(got.Calls) != 1 || got.Calls[0].Name != "search" {
					t.Fatalf("%q parsed as %+v", n.Forced+text, got)
				}
				checkValid(t, s, got.Calls[0].Arguments)
			}
			if done == 0 {
				t.Error("no generation completed")
			}
		})
	}
}

// TestReasoningFirst: with Options.After the think block stays free and
// the value starts after its closing tag, with a prompt that opens the
// block (as Qwen3's template does).
func TestReasoningFirst(t *testing.T) {
	tok, v := family(t, "qwen3")
	end, ok := tok.TokenToID("</think>")
	if !ok {
		t.Fatal("qwen3 has no </think> token")
	}
	schema := corpus(t)["openai_weather"]
	g, err := grammar.CompileSchema(v, schema, grammar.Options{Strict: true, After: "</think>"})
	if err != nil {
		t.Fatal(err)
	}
	b := enginetest.NewBackend("", 8192)
	b.ModelInfo.VocabSize, b.ModelInfo.EOS = tok.VocabSize(), tok.EOS()
	b.Logits = func(dst []float32, cache []int32, step int) {
		noise(dst, cache, step)
		if len(cache) >= 20 { // (step restarts whenever sampling leaves the argmax)
			dst[end] = 40 // the model closes its reasoning after a while
		}
	}
	e, err := engine.New(b, realTokenizer{tok}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := validator(t, "openai_weather", schema)
	done := 0
	for seed := range int64(5) {
		text, res, err := e.Generate(t.Context(), engine.Request{Prompt: "Weather?<think>\n", MaxTokens: 400, Temperature: 1, Seed: &seed, Constraint: g})
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != engine.FinishStop {
			t.Logf("cut: %s %q", res.FinishReason, text[:min(len(text), 300)])
			continue
		}
		done++
		thought, answer, found := strings.Cut(text, "</think>")
		if !found || len(thought) == 0 {
			t.Fatalf("no free reasoning before </think> in %q", text)
		}
		checkValid(t, s, answer)
	}
	if done == 0 {
		t.Error("no generation completed")
	}
}

// TestReasoningOptional: with AfterOpen beside After a model that decides
// itself whether to think may open the block (as its own token or as
// plain text), reason freely and then answer, or answer at once; special
// tokens stay refused at the first token unless they open the block.
func TestReasoningOptional(t *testing.T) {
	tok, v := family(t, "qwen3")
	open, ok1 := tok.TokenToID("<think>")
	end, ok2 := tok.TokenToID("</think>")
	imEnd, ok3 := tok.TokenToID("<|im_start|>")
	if !ok1 || !ok2 || !ok3 {
		t.Fatal("qwen3 lacks a think or chat token")
	}
	schema := corpus(t)["openai_weather"]
	g, err := grammar.CompileSchema(v, schema, grammar.Options{Strict: true, After: "</think>", AfterOpen: "<think>"})
	if err != nil {
		t.Fatal(err)
	}
	value := `{"location": "Paris", "units": null}`
	if !accepts(g, value) {
		t.Errorf("the value at once is refused")
	}
	if !accepts(g, "<think>\nhm <b>\n</think>\n\n"+value) {
		t.Errorf("a think block spelled in plain text, then the value, is refused")
	}
	for _, refused := range []string{"hm" + value, "<think>" + value, "<think>x</think>" + value + "x"} {
		if accepts(g, refused) {
			t.Errorf("%q accepted", refused)
		}
	}
	m := g.Start()
	if !m.Allowed(open) || m.Allowed(end) || m.Allowed(imEnd) {
		t.Errorf("first token: <think> %v, </think> %v, <|im_start|> %v; want only <think>", m.Allowed(open), m.Allowed(end), m.Allowed(imEnd))
	}
	if !m.Advance(open) || !m.Allowed(imEnd) || !m.Advance(end) || !m.AdvanceBytes([]byte("\n"+value)) || !m.CanEnd() {
		t.Error("<think> and </think> as tokens around free text, then the value: refused")
	}
	// Through the engine: a model that opens its reasoning on some seeds
	// and answers at once on others; every answer validates.
	const prompt = "Weather?"
	promptLen := len(tok.Encode(prompt))
	b := enginetest.NewBackend("", 8192)
	b.ModelInfo.VocabSize, b.ModelInfo.EOS = tok.VocabSize(), tok.EOS()
	b.Logits = func(dst []float32, cache []int32, step int) {
		noise(dst, cache, step)
		if len(cache) == promptLen {
			dst[open] = 11 // about as likely as all the allowed others together
		}
		if len(cache) >= promptLen+20 {
			dst[end] = 40
		}
	}
	e, err := engine.New(b, realTokenizer{tok}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := validator(t, "openai_weather", schema)
	thought, direct := 0, 0
	for seed := range int64(12) {
		text, res, err := e.Generate(t.Context(), engine.Request{Prompt: prompt, MaxTokens: 400, Temperature: 1, Seed: &seed, Constraint: g})
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != engine.FinishStop {
			continue
		}
		answer := text
		if r, a, found := strings.Cut(text, "</think>"); found {
			if !strings.HasPrefix(r, "<think>") {
				t.Fatalf("reasoning without its opening: %q", text)
			}
			thought, answer = thought+1, a
		} else {
			direct++
		}
		checkValid(t, s, answer)
	}
	t.Logf("%d answers after reasoning, %d at once", thought, direct)
	if thought == 0 || direct == 0 {
		t.Errorf("%d answers after reasoning, %d at once: want both", thought, direct)
	}
}

// TestReasoningOptionalMarkers: an opening that holds special tokens'
// text (harmony's analysis header) is matched with those tokens.
func TestReasoningOptionalMarkers(t *testing.T) {
	tok, v := family(t, "gptoss")
	ids := map[string]int32{}
	for _, s := range []string{"<|channel|>", "<|message|>", "<|end|>", "<|start|>"} {
		id, ok := tok.TokenToID(s)
		if !ok {
			t.Fatalf("gptoss has no %s token", s)
		}
		ids[s] = id
	}
	g, err := grammar.CompileSchema(v, []byte(`{"type":"integer"}`), grammar.Options{Strict: true,
		AfterOpen: "<|channel|>analysis<|message|>", After: "<|end|><|start|>assistant"})
	if err != nil {
		t.Fatal(err)
	}
	m := g.Start()
	if !m.Allowed(ids["<|channel|>"]) || m.Allowed(ids["<|message|>"]) {
		t.Fatal("first token: want <|channel|> and not <|message|>")
	}
	ok := m.Advance(ids["<|channel|>"]) && m.AdvanceBytes([]byte("analysis")) && m.Advance(ids["<|message|>"]) &&
		m.AdvanceBytes([]byte("Think.")) && m.Advance(ids["<|end|>"]) && m.Advance(ids["<|start|>"]) &&
		m.AdvanceBytes([]byte("assistant42")) && m.CanEnd()
	if !ok {
		t.Error("an analysis message in marker tokens, then the value: refused")
	}
	if !accepts(g, "42") || accepts(g, "<|channel|>final<|message|>42") {
		t.Error("the value at once refused, or another channel accepted")
	}
}

// TestUncallableTool: a tool whose parameters no value satisfies is a
// typed error naming it, also under "auto", where the free text alone
// would still compile and the tool silently never be called.
func TestUncallableTool(t *testing.T) {
	v := byteVocab()
	ts := []grammar.Tool{{Name: "ok", Parameters: []byte(`{"type":"object"}`)},
		{Name: "never", Parameters: []byte(`{"type":"object","properties":{"a":{"enum":["x"],"format":"date"}},"required":["a"]}`)}}
	for _, lazy := range []bool{false, true} {
		_, err := grammar.CompileToolCalls(v, ts, grammar.CallOptions{Lazy: lazy, Syntax: syntaxOf(t, tools.FormatHermes)})
		var se *grammar.SchemaError
		if !errors.As(err, &se) || se.Param != "tools[1].function.parameters" || !strings.Contains(se.Message, `"never"`) {
			t.Errorf("lazy %v: %v", lazy, err)
		}
	}
}
