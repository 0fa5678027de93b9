package tools_test

import (
	"context"
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
	s, err := eng.Stream(context.Background(), engine.Request{Prompt: "Weather and time in Paris?", MaxTokens: 1024})
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
