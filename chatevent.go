package prism

import (
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/tools"
)

// EventKind says what an Event carries.
type EventKind uint8

const (
	// EventReasoning is thinking text (Event.Text).
	EventReasoning EventKind = iota + 1
	// EventContent is answer text (Event.Text).
	EventContent
	// EventToolCallBegin opens a tool call: Event.Call has its Index, ID
	// and Name.
	EventToolCallBegin
	// EventToolCallArgs is a fragment of the open call's arguments
	// (Event.Call.Arguments); the fragments of a call joined are its
	// arguments' JSON text.
	EventToolCallArgs
	// EventToolCallEnd closes a call the model finished validly
	// (Event.Call.Index).
	EventToolCallEnd
	// EventWarning reports text that looked like a tool call and was not
	// one: it comes back as content, and a call already begun
	// (Event.Call.Index >= 0) is abandoned. Event.Text says what was
	// wrong.
	EventWarning
	// EventLogprobs carries the log-probabilities decided by the step
	// just emitted (Event.Logprobs), when the request asked for them:
	// each entry is a content token, and the entries' bytes joined spell
	// the content so far. It ends every step that emitted events, with
	// or without entries.
	EventLogprobs
	// EventEnd is the last event of an answer that ended without
	// failure: Event.Finish and Event.Usage are set.
	EventEnd
)

// String returns the kind's name ("content", "tool_call_begin", ...).
func (k EventKind) String() string {
	switch k {
	case EventReasoning:
		return "reasoning"
	case EventContent:
		return "content"
	case EventToolCallBegin:
		return "tool_call_begin"
	case EventToolCallArgs:
		return "tool_call_args"
	case EventToolCallEnd:
		return "tool_call_end"
	case EventWarning:
		return "warning"
	case EventLogprobs:
		return "logprobs"
	case EventEnd:
		return "end"
	}
	return "unknown"
}

// Event is one piece of a streamed answer.
type Event struct {
	Kind EventKind
	// Text is the reasoning or content text, or the warning.
	Text string
	// Call is the tool call an EventToolCall* or EventWarning is about.
	Call CallEvent
	// Logprobs are an EventLogprobs' entries.
	Logprobs []TokenLogprob
	// Finish and Usage are set on EventEnd.
	Finish FinishReason
	Usage  Usage
}

// CallEvent is the part of a tool call an Event carries.
type CallEvent struct {
	// Index is the call's position among the answer's calls; -1 on a
	// warning about text no call was begun for.
	Index int
	// ID and Name are set on EventToolCallBegin.
	ID, Name string
	// Arguments is a fragment on EventToolCallArgs.
	Arguments string
}

// TokenLogprob is the log-probability of one content token.
type TokenLogprob struct {
	// Token is the part of the token's text that is content.
	Token string
	// Logprob is the natural logarithm of its probability under the
	// model's own distribution; -9999 stands for -Inf.
	Logprob float32
	// Bytes are Token's bytes.
	Bytes []byte
	// Top are the most likely tokens at its position, most likely first.
	Top []TopLogprob
}

// TopLogprob is one alternative at a token's position.
type TopLogprob struct {
	// Token is the alternative's own text, special tokens included.
	Token   string
	Logprob float32
}

// FinishReason says why an answer ended.
type FinishReason string

const (
	// FinishStop: the model ended its turn, or a stop string came.
	FinishStop FinishReason = "stop"
	// FinishLength: the token limit, the context window or the loop
	// guard cut the answer (a call begun and not finished included).
	FinishLength FinishReason = "length"
	// FinishToolCalls: the answer made tool calls.
	FinishToolCalls FinishReason = "tool_calls"
)

// Usage counts an answer's tokens.
type Usage struct {
	// PromptTokens is the prompt's length; CachedTokens of them were
	// reused from the previous turn's cache instead of computed.
	PromptTokens, CachedTokens int
	// CompletionTokens were generated; ReasoningTokens of them were
	// thinking.
	CompletionTokens, ReasoningTokens int
}

// ChatMessage is a whole assistant answer (Complete).
type ChatMessage struct {
	// Content is the answer text; Reasoning the thinking apart from it,
	// HasReasoning true when the model thought at all (even nothing).
	Content      string
	Reasoning    string
	HasReasoning bool
	// ToolCalls are the calls the answer made, arguments whole.
	ToolCalls []ToolCall
	// Logprobs are the content tokens' entries, when asked for.
	Logprobs []TokenLogprob
	// Warnings are the EventWarning texts, in order.
	Warnings []string
	Finish   FinishReason
	Usage    Usage
}

// fromTools turns the tools package's events into the layer's, appending
// to dst; a call's first delta becomes its begin event (and an arguments
// event when it carries some).
func fromTools(dst []Event, ev []tools.Event) []Event {
	for _, e := range ev {
		switch e.Kind {
		case tools.EventContent:
			dst = append(dst, Event{Kind: EventContent, Text: e.Text})
		case tools.EventReasoning:
			dst = append(dst, Event{Kind: EventReasoning, Text: e.Text})
		case tools.EventToolCall:
			c := e.Call
			if c.ID != "" || c.Name != "" {
				dst = append(dst, Event{Kind: EventToolCallBegin, Call: CallEvent{Index: c.Index, ID: c.ID, Name: c.Name}})
			}
			if c.Arguments != "" {
				dst = append(dst, Event{Kind: EventToolCallArgs, Call: CallEvent{Index: c.Index, Arguments: c.Arguments}})
			}
		case tools.EventWarning:
			dst = append(dst, Event{Kind: EventWarning, Text: e.Warning.String(), Call: CallEvent{Index: e.Warning.Index}})
		}
	}
	return dst
}

// usageOf is the engine's usage with the reasoning tokens counted.
func usageOf(u engine.Usage, reasoning int) Usage {
	return Usage{PromptTokens: u.PromptTokens, CachedTokens: u.CachedTokens, CompletionTokens: u.CompletionTokens,
		ReasoningTokens: min(reasoning, u.CompletionTokens)}
}
