package ollama_test

import (
	"encoding/json"
	"fmt"

	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/tools"
)

// Chunks as /api/chat streams them become the events package tools gives
// for ONNX generation: thinking and <think> tags as reasoning, whole tool
// calls as OpenAI-style deltas.
func ExampleEvents() {
	ev := ollama.NewEvents(func(int) string { return "call_1" })
	var out []tools.Event
	for _, c := range []ollama.Chunk{
		{Thinking: "The user wants weather."},
		{Content: "<think>Paris.</think>"},
		{ToolCalls: []ollama.ToolCall{{Function: ollama.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}}},
	} {
		out = ev.Feed(out, c)
	}
	out = ev.Flush(out)
	for _, e := range out {
		switch e.Kind {
		case tools.EventToolCall:
			fmt.Printf("%s %d %q %q %q\n", e.Kind, e.Call.Index, e.Call.ID, e.Call.Name, e.Call.Arguments)
		default:
			fmt.Printf("%s %q\n", e.Kind, e.Text)
		}
	}
	// Output:
	// reasoning "The user wants weather."
	// reasoning "Paris."
	// tool_call 0 "call_1" "get_weather" ""
	// tool_call 0 "" "" "{\"city\":\"Paris\"}"
}
