package server

import (
	"github.com/prism-local/prism"
	"github.com/prism-local/prism/tools"
)

// feed adds one event of the tools package's form, as the output tests
// write them, through the chat layer's events the server consumes.
func (b *output) feed(e tools.Event) {
	switch e.Kind {
	case tools.EventContent:
		b.feedEvent(prism.Event{Kind: prism.EventContent, Text: e.Text})
	case tools.EventReasoning:
		b.feedEvent(prism.Event{Kind: prism.EventReasoning, Text: e.Text})
	case tools.EventToolCall:
		c := e.Call
		if c.ID != "" || c.Name != "" {
			b.feedEvent(prism.Event{Kind: prism.EventToolCallBegin, Call: prism.CallEvent{Index: c.Index, ID: c.ID, Name: c.Name}})
		}
		if c.Arguments != "" {
			b.feedEvent(prism.Event{Kind: prism.EventToolCallArgs, Call: prism.CallEvent{Index: c.Index, Arguments: c.Arguments}})
		}
	case tools.EventWarning:
		b.feedEvent(prism.Event{Kind: prism.EventWarning, Text: e.Warning.String(), Call: prism.CallEvent{Index: e.Warning.Index}})
	}
}
