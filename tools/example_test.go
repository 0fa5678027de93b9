package tools_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/tools"
)

func ExampleStreamParser() {
	ids := func(i int) string { return fmt.Sprintf("call_%d", i) }
	p := tools.NewStreamParser(tools.FormatHermes, tools.WithIDs(ids))
	var events []tools.Event
	// Text pieces as an engine streams them.
	for _, piece := range []string{"<think>", "Weather", " needed.", "</think>", "\n\n<tool", "_call>\n{\"name\": \"get_weather\"", ", \"arguments\": {\"city\"", ": \"Paris\"}}\n</tool_call>"} {
		events = p.Feed(events[:0], piece)
		for _, e := range events {
			switch e.Kind {
			case tools.EventReasoning:
				fmt.Printf("reasoning %q\n", e.Text)
			case tools.EventContent:
				fmt.Printf("content %q\n", e.Text)
			case tools.EventToolCall:
				if e.Call.Name != "" {
					fmt.Printf("call #%d id=%s type=%s name=%s\n", e.Call.Index, e.Call.ID, e.Call.Type, e.Call.Name)
				}
				if e.Call.Arguments != "" {
					fmt.Printf("  arguments %q\n", e.Call.Arguments)
				}
			case tools.EventWarning:
				fmt.Println("warning:", e.Warning)
			}
		}
	}
	_ = p.Flush(events[:0])
	// Output:
	// reasoning "Weather"
	// reasoning " needed."
	// call #0 id=call_0 type=function name=get_weather
	//   arguments "{\"city\""
	//   arguments ": \"Paris\"}"
}

func ExampleParse() {
	out := "<|channel|>analysis<|message|>User wants weather.<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"
	r := tools.Parse(tools.FormatHarmony, out, tools.WithIDs(func(int) string { return "call_1" }))
	fmt.Printf("reasoning %q\n", r.Reasoning)
	for _, c := range r.Calls {
		fmt.Println(c.ID, c.Name, c.Arguments)
	}
	// Output:
	// reasoning "User wants weather."
	// call_1 get_weather {"city":"Paris"}
}

func ExampleNarrow() {
	requestTools := []json.RawMessage{
		json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}`),
		json.RawMessage(`{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}`),
	}
	n, err := tools.Narrow(json.RawMessage(`{"type": "function", "function": {"name": "get_time"}}`), requestTools, tools.FormatHermes)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(n.Tools), n.MustCall())
	fmt.Printf("%q\n", n.Forced)

	_, err = tools.Narrow(json.RawMessage(`{"type": "function", "function": {"name": "launch"}}`), requestTools, tools.FormatHermes)
	var te *tools.Error
	if errors.As(err, &te) {
		fmt.Println(te.Code(), "-", te.Message)
	}
	// Output:
	// 1 true
	// "<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
	// invalid_request_error - tool_choice names function "launch", which is not among the tools; the tools offered are: get_weather, get_time
}

func ExampleNarrowed_ForcedAfter() {
	n, _ := tools.Narrow(json.RawMessage(`"required"`),
		[]json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}, tools.FormatHermes)
	prompt := "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
	forced := n.ForcedAfter(prompt)
	// Append forced to the prompt, and feed it to the parser first.
	p := tools.NewStreamParser(tools.FormatHermes, tools.WithReasoning(reasoning.WithPrompt(prompt)))
	events := p.Feed(nil, forced)
	events = p.Feed(events, `f", "arguments": {}}</tool_call>`)
	events = p.Flush(events)
	r := tools.Assemble(events, p.ReasoningSeen())
	fmt.Printf("%q\n", forced)
	fmt.Println(len(r.Calls), r.Calls[0].Name, r.Calls[0].Arguments)
	// Output:
	// "</think>\n\n<tool_call>\n{\"name\": \""
	// 1 f {}
}

func ExampleDetectFormat() {
	qwen := `{%- for tool_call in message.tool_calls %}{{- '<tool_call>\n{"name": "' }}{{- tool_call.name }}{% endfor %}`
	fmt.Println(tools.DetectFormat(qwen))
	// Output: hermes
}

func ExampleSchema_Check() {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters":
		{"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["unit"]}}}`)
	s, err := tools.ToolSchema(tool)
	if err != nil {
		panic(err)
	}
	for _, args := range []string{`{"unit": "cel`, `{"unit": "kel`, `{"unit": "celsius"}`, `{}`} {
		fmt.Println(args, s.Check(args))
	}
	// Output:
	// {"unit": "cel viable
	// {"unit": "kel invalid
	// {"unit": "celsius"} complete
	// {} invalid
}
