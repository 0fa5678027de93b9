package prism

import (
	"context"

	"github.com/prism-local/prism/engine"
)

// ChatBackend answers chat requests for the models it serves: the engine
// through a Manager (EngineChat) or Ollama (OllamaChat). Everything that
// can fail before the answer begins (spec I3: the template, the load, the
// constraint's compilation, the context length, the first Ollama chunk)
// is ChatStream's error, so a caller that has written nothing yet can
// still report it.
type ChatBackend interface {
	ChatStream(ctx context.Context, model string, req ChatRequest) (*ChatStream, error)
}

// Complete asks b for the whole answer of model to req, blocking until it
// ends.
func Complete(ctx context.Context, b ChatBackend, model string, req ChatRequest) (*ChatMessage, error) {
	st, err := b.ChatStream(ctx, model, req)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Collect()
}

// source is one backend's answer, a step at a time.
type source interface {
	// step appends the events of the next step to dst; it reports false
	// once the answer is over (dst then holds its last events).
	step(dst []Event) ([]Event, bool)
	err() error
	finish() FinishReason
	usage() Usage
	reasoningSeen() bool
	// stats is the engine's account of the answer (usage, timings).
	stats() engine.Result
	close() error
}

// ChatStream is an answer being produced, read as events with Next and
// Event; Err reports a failure that ended it early. Close it when done
// (it releases the model). Not safe for concurrent use, except Close.
type ChatStream struct {
	src  source
	buf  []Event
	i    int
	cur  Event
	over bool

	// Prompt is the rendered prompt the engine generates from, forced
	// text included (empty for Ollama, which renders its own).
	Prompt string
	// TemplateFallback is the failure of the model's own template when
	// the built-in format replaced it; nil otherwise.
	TemplateFallback error
	// NullAsEmpty lists the messages whose null content the template was
	// given as "" because it failed on null.
	NullAsEmpty []int
}

// Next advances to the next event; false when the answer is over or
// failed (see Err).
func (s *ChatStream) Next() bool {
	for s.i >= len(s.buf) {
		if s.over {
			return false
		}
		var more bool
		s.buf, more = s.src.step(s.buf[:0])
		s.i = 0
		if !more {
			s.over = true
			if s.src.err() == nil {
				s.buf = append(s.buf, Event{Kind: EventEnd, Finish: s.src.finish(), Usage: s.src.usage()})
			}
		}
	}
	s.cur = s.buf[s.i]
	s.i++
	return true
}

// Event is the current event.
func (s *ChatStream) Event() Event { return s.cur }

// Err is the failure that ended the answer early; nil when it ended.
func (s *ChatStream) Err() error { return s.src.err() }

// Finish is why the answer ended, once it has.
func (s *ChatStream) Finish() FinishReason { return s.src.finish() }

// Usage counts the answer's tokens, once it has ended.
func (s *ChatStream) Usage() Usage { return s.src.usage() }

// ReasoningSeen reports whether the answer had reasoning at all.
func (s *ChatStream) ReasoningSeen() bool { return s.src.reasoningSeen() }

// Stats is the engine's account of the answer (usage and timings; for
// Ollama what it reported), complete once the stream is closed.
func (s *ChatStream) Stats() engine.Result { return s.src.stats() }

// Close ends the answer, stopping generation, and releases the model.
func (s *ChatStream) Close() error { return s.src.close() }

// Collect reads the rest of the stream into a whole message, as a client
// joins deltas: texts concatenated, each call's fragments joined, calls a
// warning abandoned left out.
func (s *ChatStream) Collect() (*ChatMessage, error) {
	m := &ChatMessage{}
	var content, reasoning []byte
	var calls []ToolCall
	var indexes []int
	abandoned := map[int]bool{}
	for s.Next() {
		e := s.Event()
		switch e.Kind {
		case EventContent:
			content = append(content, e.Text...)
		case EventReasoning:
			reasoning = append(reasoning, e.Text...)
		case EventToolCallBegin:
			calls = append(calls, ToolCall{ID: e.Call.ID, Name: e.Call.Name})
			indexes = append(indexes, e.Call.Index)
		case EventToolCallArgs:
			for i := len(indexes) - 1; i >= 0; i-- {
				if indexes[i] == e.Call.Index {
					calls[i].Arguments += e.Call.Arguments
					break
				}
			}
		case EventWarning:
			m.Warnings = append(m.Warnings, e.Text)
			if e.Call.Index >= 0 {
				abandoned[e.Call.Index] = true
			}
		case EventLogprobs:
			m.Logprobs = append(m.Logprobs, e.Logprobs...)
		case EventEnd:
			m.Finish, m.Usage = e.Finish, e.Usage
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	for i, c := range calls {
		if !abandoned[indexes[i]] {
			m.ToolCalls = append(m.ToolCalls, c)
		}
	}
	m.Content, m.Reasoning, m.HasReasoning = string(content), string(reasoning), s.ReasoningSeen()
	return m, nil
}

// ScriptedStream returns a stream that yields events as they are given,
// with an EventEnd (FinishStop) added when they have none, and err, when
// not nil, as its Err after the last. It is for the tests of code that
// reads the chat layer: a fake ChatBackend returns one. Finish and Usage
// are those of the EventEnd.
func ScriptedStream(err error, events ...Event) *ChatStream {
	s := &scriptSource{events: events, failure: err, finishReason: FinishStop}
	for _, e := range events {
		if e.Kind == EventEnd {
			s.finishReason, s.usageSeen = e.Finish, e.Usage
		}
		if e.Kind == EventReasoning {
			s.thought = true
		}
	}
	return &ChatStream{src: s}
}

// scriptSource is a ScriptedStream's source: its events in one step.
type scriptSource struct {
	events       []Event
	failure      error
	finishReason FinishReason
	usageSeen    Usage
	thought      bool
	done         bool
}

func (s *scriptSource) step(dst []Event) ([]Event, bool) {
	if s.done {
		return dst, false
	}
	s.done = true
	for _, e := range s.events {
		if e.Kind != EventEnd {
			dst = append(dst, e)
		}
	}
	return dst, false
}

func (s *scriptSource) err() error           { return s.failure }
func (s *scriptSource) finish() FinishReason { return s.finishReason }
func (s *scriptSource) usage() Usage         { return s.usageSeen }
func (s *scriptSource) reasoningSeen() bool  { return s.thought }
func (s *scriptSource) stats() engine.Result { return engine.Result{} }
func (s *scriptSource) close() error         { return nil }
