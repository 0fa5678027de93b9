package ollama

import (
	"bytes"
	"encoding/json"

	"github.com/prism-local/prism/reasoning"
	"github.com/prism-local/prism/tools"
)

// Events turns the chunks of one answer into the events package tools
// gives for ONNX generation, so one writer serves both: thinking (from
// message.thinking, or from <think> tags inside message.content, split
// with the reasoning package's splitter) as reasoning, the rest as content,
// and each of Ollama's whole tool calls as two call deltas — the first with
// index, id, type and name, the second with the whole arguments. Create one
// per answer; it is not safe for concurrent use.
type Events struct {
	split  *reasoning.Splitter
	pieces []reasoning.Piece
	ids    func(int) string
	calls  int
}

// NewEvents returns the mapper for one answer. ids makes call ids for calls
// Ollama gives none (nil for tools.RandomID); opts configure the think-tag
// splitter.
func NewEvents(ids func(int) string, opts ...reasoning.Option) *Events {
	if ids == nil {
		ids = tools.RandomID
	}
	return &Events{split: reasoning.NewSplitter(opts...), ids: ids}
}

// Feed appends the events of c to dst.
func (e *Events) Feed(dst []tools.Event, c Chunk) []tools.Event {
	e.pieces = e.split.FeedThinking(e.pieces[:0], c.Thinking)
	e.pieces = e.split.Feed(e.pieces, c.Content)
	dst = e.route(dst)
	for _, tc := range c.ToolCalls {
		id := tc.ID
		if id == "" {
			id = e.ids(e.calls)
		}
		args := tc.Function.Arguments
		var buf bytes.Buffer
		if json.Compact(&buf, args) == nil {
			args = buf.Bytes()
		}
		dst = append(dst,
			tools.Event{Kind: tools.EventToolCall, Call: tools.CallDelta{Index: e.calls, ID: id, Type: "function", Name: tc.Function.Name}},
			tools.Event{Kind: tools.EventToolCall, Call: tools.CallDelta{Index: e.calls, Arguments: string(args)}})
		e.calls++
	}
	return dst
}

// Flush ends the answer: text held back as a possible tag is released.
func (e *Events) Flush(dst []tools.Event) []tools.Event {
	e.pieces = e.split.Flush(e.pieces[:0])
	return e.route(dst)
}

// Calls returns how many tool calls the answer made so far.
func (e *Events) Calls() int { return e.calls }

// ReasoningSeen reports whether the answer had any reasoning.
func (e *Events) ReasoningSeen() bool { return e.split.Seen() }

func (e *Events) route(dst []tools.Event) []tools.Event {
	for _, p := range e.pieces {
		k := tools.EventContent
		if p.Kind == reasoning.Reasoning {
			k = tools.EventReasoning
		}
		dst = append(dst, tools.Event{Kind: k, Text: p.Text})
	}
	return dst
}
