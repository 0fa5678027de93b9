package tools

// Call is a complete tool call parsed from a whole answer.
type Call struct {
	// ID is the call id ("call_…" unless WithIDs says otherwise).
	ID string
	// Name is the function name.
	Name string
	// Arguments is the arguments object as JSON text.
	Arguments string
}

// Result is a whole answer parsed into reasoning, content and tool calls.
type Result struct {
	// Content is the answer text outside tool calls (whitespace next to a
	// call is dropped). Text that looked like a call but was not one is
	// here too, and is named in Warnings.
	Content string
	// Reasoning is the thinking text; HasReasoning says whether there was
	// any (P7: without it the reasoning field is omitted).
	Reasoning    string
	HasReasoning bool
	// Calls are the valid tool calls in order.
	Calls []Call
	// Warnings describe tool-call text handed back as content.
	Warnings []Warning
}

// Parse parses a whole generated answer in format f. It gives exactly what a
// [StreamParser] fed the same text in any pieces gives, assembled by
// [Assemble].
func Parse(f Format, text string, opts ...StreamOption) Result {
	p := NewStreamParser(f, opts...)
	events := p.Feed(nil, text)
	events = p.Flush(events)
	return Assemble(events, p.ReasoningSeen())
}

// Assemble joins a stream's events into a Result, the way a client joins
// deltas: texts are concatenated and each call's argument fragments joined.
// Calls a warning abandons are left out. reasoningSeen is the parser's
// ReasoningSeen.
func Assemble(events []Event, reasoningSeen bool) Result {
	var content, thinking []byte
	var calls []Call
	var indexes []int
	abandoned := map[int]bool{}
	var res Result
	for _, e := range events {
		switch e.Kind {
		case EventContent:
			content = append(content, e.Text...)
		case EventReasoning:
			thinking = append(thinking, e.Text...)
		case EventToolCall:
			d := e.Call
			if d.Name != "" || d.ID != "" {
				calls = append(calls, Call{ID: d.ID, Name: d.Name})
				indexes = append(indexes, d.Index)
			}
			for i := len(indexes) - 1; i >= 0; i-- {
				if indexes[i] == d.Index {
					calls[i].Arguments += d.Arguments
					break
				}
			}
		case EventWarning:
			res.Warnings = append(res.Warnings, e.Warning)
			if e.Warning.Index >= 0 {
				abandoned[e.Warning.Index] = true
			}
		}
	}
	for i, c := range calls {
		if !abandoned[indexes[i]] {
			res.Calls = append(res.Calls, c)
		}
	}
	res.Content = string(content)
	res.Reasoning = string(thinking)
	res.HasReasoning = reasoningSeen
	return res
}
