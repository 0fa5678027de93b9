//go:build cgo

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/templates"
	"github.com/prism-local/prism/tools"
)

// answer is what the scripted model says, whatever it is asked: thinking,
// then a call of the offered tool, in Qwen3's Hermes-style format.
const answer = "<think>\nThe user wants the weather in Paris, so I call get_weather.\n</think>\n\n" +
	"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>"

const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
 "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}}}`

// scriptedQwen3 writes a tiny scripted model with the real Qwen3 tokenizer
// and chat template and returns its folder.
func scriptedQwen3(t *testing.T, layout onnxgen.Layout) string {
	t.Helper()
	tokDir := fixtures.TokenizerDir(t, "qwen3")
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	eos, ok := tok.TokenToID("<|im_end|>")
	if !ok {
		t.Fatal("qwen3 tokenizer has no <|im_end|>")
	}
	cfg := onnxgen.Tiny()
	cfg.Layout = layout
	cfg.Context = 1024
	cfg.TokenizerDir = tokDir
	cfg.Vocab = 0
	cfg.Script = tok.Encode(answer)
	cfg.ScriptEOS = int(eos)
	dir := filepath.Join(t.TempDir(), "model")
	if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openModel(t testing.TB, dir string, opts ...prism.Option) *engine.Engine {
	t.Helper()
	lk, err := lock.New(lock.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]prism.Option{prism.WithDevice("cpu"), prism.WithORTLibrary(fixtures.ORTLib(t)), prism.WithLock(lk)}, opts...)
	eng, err := prism.Open(context.Background(), dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// TestThinkingThenToolCallStreamed is the chain a chat completion with
// tools takes: the real template renders the tools into the prompt, the
// real runtime generates token by token, and the stream arrives as
// reasoning deltas and tool-call deltas with nothing leaked into content.
func TestThinkingThenToolCallStreamed(t *testing.T) {
	for _, layout := range []onnxgen.Layout{onnxgen.LayoutOptimum, onnxgen.LayoutGenAI} {
		t.Run(string(layout), func(t *testing.T) {
			dir := scriptedQwen3(t, layout)
			chat, err := prism.LoadChat(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := chat.Err(); err != nil {
				t.Fatal(err)
			}
			prompt, err := chat.Render(t.Context(), templates.Input{
				Messages:            []templates.Message{{Role: "user", Content: templates.Text("What is the weather in Paris?")}},
				Tools:               []json.RawMessage{json.RawMessage(weatherTool)},
				AddGenerationPrompt: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if prompt.Fallback || !strings.Contains(prompt.Text, `"name": "get_weather"`) {
				t.Fatalf("the tools did not reach the prompt:\n%s", prompt.Text)
			}

			format := tools.DetectFormat(chat.Source(true))
			if format != tools.FormatHermes {
				t.Fatalf("format %v, want Hermes for Qwen3", format)
			}
			parser := tools.NewStreamParser(format,
				tools.WithIDs(func(i int) string { return "call_0" }),
				tools.WithReasoning(reasoning.WithPrompt(prompt.Text)))

			eng := openModel(t, dir)
			s, err := eng.Stream(context.Background(), engine.Request{Prompt: prompt.Text, MaxTokens: 200})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var all, events []tools.Event
			for s.Next() {
				events = parser.Feed(events[:0], s.Token().Text())
				all = append(all, events...)
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			all = append(all, parser.Flush(nil)...)
			if got := s.Result().FinishReason; got != engine.FinishStop {
				t.Fatalf("finish reason %q, want stop (EOS after the script)", got)
			}

			var reasoningDeltas, argDeltas int
			for _, e := range all {
				switch e.Kind {
				case tools.EventContent:
					if strings.TrimSpace(e.Text) != "" {
						t.Fatalf("content leaked: %q", e.Text)
					}
				case tools.EventWarning:
					t.Fatalf("parser warning: %v", e.Warning)
				case tools.EventReasoning:
					reasoningDeltas++
				case tools.EventToolCall:
					if e.Call.Name == "" {
						argDeltas++
					}
				}
			}
			if reasoningDeltas < 5 || argDeltas < 2 {
				t.Fatalf("%d reasoning deltas and %d argument deltas: the answer did not stream", reasoningDeltas, argDeltas)
			}
			r := tools.Assemble(all, parser.ReasoningSeen())
			want := []tools.Call{{ID: "call_0", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "celsius"}`}}
			if !reflect.DeepEqual(r.Calls, want) {
				t.Fatalf("calls %+v, want %+v", r.Calls, want)
			}
			if want := "\nThe user wants the weather in Paris, so I call get_weather.\n"; r.Reasoning != want {
				t.Fatalf("reasoning %q, want %q", r.Reasoning, want)
			}
		})
	}
}
