package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/templates"
)

// question is the user's turn i of a long conversation: about 60 tokens.
func question(i int) string {
	return fmt.Sprintf("Question %d: %s", i, strings.Repeat("tell me more about the weather in Paris, ", 8))
}

// TestPromptKeepsEarlierTurns renders a 10-turn conversation with each
// real chat template of internal/fixtures, the assistant turns carrying
// reasoning as a client sends them back, and checks that every turn's
// prompt starts with the previous turn's prompt, as token ids — what the
// engine's prefix reuse needs. It also logs whether the previous answer as
// the model generated it (think block included) is kept: templates that
// drop earlier reasoning (Qwen3, DeepSeek, gpt-oss) re-render that answer
// without it, so its tokens are computed again — once, not growing with the
// history.
func TestPromptKeepsEarlierTurns(t *testing.T) {
	for _, family := range raceShort([]string{"qwen3", "llama3_1", "gemma3", "deepseek_v3", "gptoss", "llama2"}) {
		t.Run(family, func(t *testing.T) {
			dir := fixtures.TokenizerDir(t, family)
			chat, err := prism.LoadChat(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if chat.Source(false) == "" {
				t.Skipf("the %s fixture ships no chat template", family)
			}
			tok, err := tokenizer.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []templates.Message
			var prev []int32
			prevText, keptGenerated, keptPlain := "", 0, 0
			for turn := 1; turn <= 10; turn++ {
				msgs = append(msgs, templates.Message{Role: "user", Content: templates.Text(question(turn))})
				p, err := chat.Render(context.Background(), templates.Input{Messages: msgs, AddGenerationPrompt: true})
				if err != nil {
					t.Fatal(err)
				}
				if p.Fallback {
					t.Fatalf("turn %d: built-in format used: %v", turn, p.FallbackCause)
				}
				ids := tok.Encode(p.Text)
				if turn > 1 {
					if !strings.HasPrefix(p.Text, prevText) {
						t.Errorf("turn %d: the prompt does not start with turn %d's", turn, turn-1)
					}
					if n := commonPrefix(prev, ids); n != len(prev) {
						t.Errorf("turn %d: %d of the previous prompt's %d tokens kept", turn, n, len(prev))
					}
					if strings.HasPrefix(p.Text, prevText+generated(turn-1)) {
						keptGenerated++
					}
					if strings.HasPrefix(p.Text, prevText+answerOf(turn-1)) {
						keptPlain++
					}
				}
				prev, prevText = ids, p.Text
				msgs = append(msgs, templates.Message{Role: "assistant", Content: templates.Text(answerOf(turn)), ReasoningContent: ptr(reasoningOf(turn))})
			}
			t.Logf("%s: 10 turns, last prompt %d tokens; the previous answer follows the previous prompt as generated (think block included) in %d of 9 turns, its content alone in %d",
				family, len(prev), keptGenerated, keptPlain)
		})
	}
}

func answerOf(turn int) string    { return fmt.Sprintf("It is sunny, answer %d.", turn) }
func reasoningOf(turn int) string { return fmt.Sprintf("The user asks question %d.", turn) }

// generated is the answer of turn as a Qwen-style model writes it.
func generated(turn int) string {
	return "<think>\n" + reasoningOf(turn) + "\n</think>\n\n" + answerOf(turn)
}

// commonPrefix is the length of the common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// TestPromptAfterToolCallTurn: a turn in which the assistant reasoned, called
// a tool and answered, followed by a new user message. Qwen3's template
// renders the reasoning of the assistant messages after the last user
// message only, so once the next user message arrives that turn is
// rendered again without it: the prompt the engine cached stops matching at
// the turn's first assistant message. The test pins down where the reuse
// ends (never before that turn), and logs it.
func TestPromptAfterToolCallTurn(t *testing.T) {
	dir := fixtures.TokenizerDir(t, "qwen3")
	chat, err := prism.LoadChat(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`)}
	msgs := []templates.Message{
		{Role: "user", Content: templates.Text(question(1))},
		{Role: "assistant", Content: templates.Text(answerOf(1)), ReasoningContent: ptr(reasoningOf(1))},
		{Role: "user", Content: templates.Text("What is the weather in Paris?")},
	}
	before := len(render(t, chat, msgs, tools, false))
	msgs = append(msgs,
		// Content "" rather than null: this Qwen3 template calls
		// content.lstrip() on a null content and fails (as it does in Jinja).
		templates.Message{Role: "assistant", Content: templates.Text(""), ReasoningContent: ptr("I should call the tool."),
			ToolCalls: []templates.ToolCall{{ID: "c1", Type: "function", Function: templates.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}}},
		templates.Message{Role: "tool", ToolCallID: "c1", Content: templates.Text(`{"sky":"clear"}`)})
	mid := render(t, chat, msgs, tools, true) // the step after the tool result
	msgs = append(msgs, templates.Message{Role: "assistant", Content: templates.Text("It is clear."), ReasoningContent: ptr("The tool says clear.")},
		templates.Message{Role: "user", Content: templates.Text("Thanks!")})
	next := render(t, chat, msgs, tools, true)
	n := 0
	for n < len(mid) && n < len(next) && mid[n] == next[n] {
		n++
	}
	if n < before {
		t.Errorf("the next turn's prompt leaves the cached one at byte %d, before the tool-call turn (byte %d)", n, before)
	}
	t.Logf("qwen3 tool-call turn: the cached prompt (%d bytes) is kept for %d bytes; the turn starts at byte %d (its reasoning is dropped on the next user turn: %v)",
		len(mid), n, before, n < len(mid))
}

func render(t *testing.T, chat *templates.Chat, msgs []templates.Message, tools []json.RawMessage, gen bool) string {
	t.Helper()
	p, err := chat.Render(context.Background(), templates.Input{Messages: msgs, Tools: tools, AddGenerationPrompt: gen})
	if err != nil || p.Fallback {
		t.Fatalf("render: %v (fallback %v)", err, p.FallbackCause)
	}
	return p.Text
}
