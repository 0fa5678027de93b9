package server

import (
	"strings"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/internal/app/wire"
)

// output builds a response's output items from the events of the answer:
// reasoning text opens a reasoning item, answer text a message, a call's
// first delta a function_call; each item is closed when another begins or
// the answer ends. With send set it also sends the stream's events, in
// OpenAI's order, as it goes, so a streamed and a whole response are built
// by the same steps.
type output struct {
	seq   wire.EventSeq
	send  func(wire.Event) error
	items []wire.OutputItem
	open  bool            // the last item is still being written
	text  strings.Builder // the open item's text or arguments so far
	calls map[int]int     // a call's index in the answer → its item's index
	// abandoned are the ids of the call items the parser gave up on (their
	// text came back as answer text).
	abandoned map[string]bool
	// lp places the content tokens' log-probabilities; nil when the
	// request did not ask for them.
	lp *textLogprobs
	// ending: the answer is over, so close places every entry left.
	ending bool
	// err is the first error of send; nothing is sent after it.
	err error
}

// textLogprobs places the logprobs entries a trail decides (whose bytes
// spell the content, in order) on the message items whose text they
// spell: a message's entries go with its output_text deltas and make its
// part's logprobs. An entry is decided once the parser has moved past its
// token, so it may come a step after the delta with its text; it then goes
// with the message's next delta, or, when the message closes first, with
// an output_text.delta of no text just before output_text.done. An entry
// decided only after its message closed (its token ran into text the
// trail could not place) is added to the message's part, in the final
// response, but no delta carries it.
type textLogprobs struct {
	pending []wire.TokenLogprob // decided, not yet placed
	at      int                 // content bytes the placed entries spell
	written int                 // content bytes written to message items
	open    []wire.TokenLogprob // the open message's entries
	closed  []closedMessage
}

// closedMessage is a message item that was closed and where in the
// content its text ends.
type closedMessage struct{ item, end int }

// take removes and returns the pending entries whose text has been
// written, an entry without text going with the one after it; all of them
// when all is set.
func (l *textLogprobs) take(all bool) []wire.TokenLogprob {
	n, at := 0, l.at
	for i, e := range l.pending {
		if len(e.Bytes) > 0 {
			if !all && at >= l.written {
				break
			}
			at += len(e.Bytes)
			n = i + 1
		} else if all {
			n = i + 1
		}
	}
	taken := l.pending[:n:n]
	l.pending, l.at = l.pending[n:], at
	return taken
}

// addLogprobs adds the entries decided since the last call; it is called
// before the events of the same step are fed. Entries for a message
// already closed go to its part at once.
func (b *output) addLogprobs(entries []wire.TokenLogprob) {
	l := b.lp
	l.pending = append(l.pending, entries...)
	for len(l.pending) > 0 && len(l.closed) > 0 && l.at < l.closed[len(l.closed)-1].end {
		c := 0
		for l.closed[c].end <= l.at {
			c++
		}
		e := l.pending[0]
		l.pending, l.at = l.pending[1:], l.at+len(e.Bytes)
		part := &b.items[l.closed[c].item].Content[0]
		part.Logprobs = append(part.Logprobs, e)
	}
}

// newOutput returns a builder that sends its events to send; nil for none.
func newOutput(send func(wire.Event) error) *output {
	return &output{send: send, calls: map[int]int{}, abandoned: map[string]bool{}}
}

func (b *output) emit(e wire.Event) {
	if b.send != nil && b.err == nil {
		b.err = b.send(e)
	}
}

// feedEvent adds one event of the answer.
func (b *output) feedEvent(e prism.Event) {
	switch e.Kind {
	case prism.EventContent:
		b.appendText(wire.ItemMessage, e.Text)
	case prism.EventReasoning:
		b.appendText(wire.ItemReasoning, e.Text)
	case prism.EventToolCallBegin:
		b.call(e.Call.Index, e.Call.ID, e.Call.Name, "")
	case prism.EventToolCallArgs:
		b.call(e.Call.Index, "", "", e.Call.Arguments)
	case prism.EventWarning:
		if e.Call.Index >= 0 {
			b.abandon(e.Call.Index)
		}
	}
}

// last returns the index of the last item.
func (b *output) last() int { return len(b.items) - 1 }

func (b *output) start(it wire.OutputItem) {
	b.items = append(b.items, it)
	b.open = true
	b.emit(b.seq.Item(wire.EventItemAdded, b.last(), it))
}

// appendText adds text to the open item of type typ (a message or
// reasoning), opening one with its content part first when needed.
func (b *output) appendText(typ, text string) {
	if text == "" {
		return
	}
	if !b.open || b.items[b.last()].Type != typ {
		b.close(wire.StatusCompleted)
		prefix, part := "msg_", "output_text"
		if typ == wire.ItemReasoning {
			prefix, part = "rs_", "reasoning_text"
		}
		b.start(wire.OutputItem{Type: typ, ID: prefix + randomHex(24), Status: wire.StatusInProgress})
		b.emit(b.seq.Part(wire.EventPartAdded, b.items[b.last()].ID, b.last(), 0, wire.OutputPart{Type: part}))
	}
	b.text.WriteString(text)
	name := wire.EventTextDelta
	var entries []wire.TokenLogprob
	if typ == wire.ItemReasoning {
		name = wire.EventReasoningDelta
	} else if l := b.lp; l != nil {
		l.written += len(text)
		entries = l.take(false)
		l.open = append(l.open, entries...)
	}
	b.emit(b.seq.TextDelta(name, b.items[b.last()].ID, b.last(), 0, text, entries))
}

// call adds a tool-call delta: the first one of a call (id and name) opens
// its function_call item, the others carry fragments of its arguments.
func (b *output) call(index int, id, name, args string) {
	if id != "" || name != "" {
		b.close(wire.StatusCompleted)
		b.start(wire.OutputItem{Type: wire.ItemFunctionCall, ID: "fc_" + randomHex(24), Status: wire.StatusInProgress,
			CallID: id, Name: name})
		b.calls[index] = b.last()
	}
	i, ok := b.calls[index]
	if !ok || args == "" {
		return
	}
	if !b.open || i != b.last() {
		// Fragments come while their call is the item being written; one
		// for an earlier item is kept in it rather than lost.
		b.items[i].Arguments += args
		return
	}
	b.text.WriteString(args)
	b.emit(b.seq.ArgumentsDelta(b.items[i].ID, i, args))
}

// abandon marks the call the parser gave up on (its text comes back as
// answer text) incomplete.
func (b *output) abandon(index int) {
	i, ok := b.calls[index]
	if !ok {
		return
	}
	b.abandoned[b.items[i].ID] = true
	if b.open && i == b.last() {
		b.close(wire.StatusIncomplete)
		return
	}
	b.items[i].Status = wire.StatusIncomplete
}

// close ends the open item with status: its text (or arguments) complete,
// the done events sent.
func (b *output) close(status string) {
	if !b.open {
		return
	}
	b.open = false
	i := b.last()
	it := &b.items[i]
	it.Status = status
	text := b.text.String()
	b.text.Reset()
	switch it.Type {
	case wire.ItemFunctionCall:
		it.Arguments = text
		b.emit(b.seq.ArgumentsDone(it.ID, i, it.Name, text))
	default:
		part, done := wire.OutputPart{Type: "output_text", Text: text}, wire.EventTextDone
		if it.Type == wire.ItemReasoning {
			part.Type, done = "reasoning_text", wire.EventReasoningDone
		} else if l := b.lp; l != nil {
			if late := l.take(b.ending); len(late) > 0 {
				b.emit(b.seq.TextDelta(wire.EventTextDelta, it.ID, i, 0, "", late))
				l.open = append(l.open, late...)
			}
			part.Logprobs = l.open
			l.open = nil
			l.closed = append(l.closed, closedMessage{item: i, end: l.written})
		}
		it.Content = []wire.OutputPart{part}
		b.emit(b.seq.TextDone(done, it.ID, i, 0, text, part.Logprobs))
		b.emit(b.seq.Part(wire.EventPartDone, it.ID, i, 0, part))
	}
	b.emit(b.seq.Item(wire.EventItemDone, i, *it))
}

// end closes the output when the answer is over: the open item, with the
// entries still pending, which go to the last message when none is open.
func (b *output) end(status string) {
	b.ending = true
	b.close(status)
	if l := b.lp; l != nil && len(l.pending) > 0 && len(l.closed) > 0 {
		part := &b.items[l.closed[len(l.closed)-1].item].Content[0]
		part.Logprobs = append(part.Logprobs, l.take(true)...)
	}
}
