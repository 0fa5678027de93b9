package grammar_test

import (
	"encoding/json"
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
	for seed := range int64(3) {
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
