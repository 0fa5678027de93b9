package tools_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/tools"
)

// TestEngineStream feeds a real engine token stream (over a scripted
// backend) through the parser: thinking, then two tool calls, must arrive as
// reasoning deltas and tool-call deltas with nothing in content.
func TestEngineStream(t *testing.T) {
	reply := "<think>\nThe user wants weather and time. 日本.\n</think>\n\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Paris\"}}\n</tool_call>"
	eng, err := enginetest.New(reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	s, err := eng.Stream(t.Context(), engine.Request{Prompt: "Weather and time in Paris?", MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	p := tools.NewStreamParser(tools.FormatHermes,
		tools.WithIDs(func(i int) string { return []string{"call_a", "call_b"}[i] }),
		tools.WithReasoning(reasoning.WithPrompt("<|im_start|>assistant\n")))
	var events, all []tools.Event
	tokens := 0
	for s.Next() {
		tokens++
		events = p.Feed(events[:0], s.Token().Text())
		all = append(all, events...)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	all = append(all, p.Flush(nil)...)
	if tokens < 50 {
		t.Fatalf("only %d tokens: the stream was not token by token", tokens)
	}
	var reasoningDeltas, firstDeltas int
	for _, e := range all {
		switch e.Kind {
		case tools.EventContent:
			t.Fatalf("content leaked: %q", e.Text)
		case tools.EventWarning:
			t.Fatalf("warning: %v", e.Warning)
		case tools.EventReasoning:
			reasoningDeltas++
		case tools.EventToolCall:
			if e.Call.Name != "" {
				firstDeltas++
			}
		}
	}
	if reasoningDeltas < 10 || firstDeltas != 2 {
		t.Fatalf("%d reasoning deltas, %d first call deltas", reasoningDeltas, firstDeltas)
	}
	r := tools.Assemble(all, p.ReasoningSeen())
	want := []tools.Call{
		{ID: "call_a", Name: "get_weather", Arguments: `{"city": "Paris"}`},
		{ID: "call_b", Name: "get_time", Arguments: `{"zone": "Europe/Paris"}`},
	}
	if r.Reasoning != "\nThe user wants weather and time. 日本.\n" || !reflect.DeepEqual(r.Calls, want) {
		t.Fatalf("assembled %+v", r)
	}
}

// TestEngineForcedChoice runs a named tool_choice through a real engine: the
// forced opening goes into the prompt and, first, into the parser; the
// model (scripted) continues with the arguments; the answer is a call of the
// named function and Verify accepts it.
func TestEngineForcedChoice(t *testing.T) {
	offered := []json.RawMessage{
		json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`),
		json.RawMessage(`{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}`),
	}
	n, err := tools.Narrow(json.RawMessage(`{"type":"function","function":{"name":"get_time"}}`), offered, tools.FormatHermes)
	if err != nil {
		t.Fatal(err)
	}
	prompt := "<|im_start|>user\nWhat time is it in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n"
	forced := n.ForcedAfter(prompt)

	eng, err := enginetest.New(`{"zone": "Europe/Paris"}}` + "\n</tool_call>")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	s, err := eng.Stream(t.Context(), engine.Request{Prompt: prompt + forced, MaxTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	p := tools.NewStreamParser(tools.FormatHermes, tools.WithReasoning(reasoning.WithPrompt(prompt)))
	all := p.Feed(nil, forced)
	for s.Next() {
		all = p.Feed(all, s.Token().Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	all = p.Flush(all)
	r := tools.Assemble(all, p.ReasoningSeen())
	if err := n.Verify(r.Calls); err != nil {
		t.Fatalf("%v; result %+v", err, r)
	}
	if len(r.Calls) != 1 || r.Calls[0].Arguments != `{"zone": "Europe/Paris"}` || r.Content != "" || p.Completed() != 1 {
		t.Fatalf("result %+v", r)
	}
}
