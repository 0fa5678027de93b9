package prism

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/prism-local/prism/tools"
)

// repeats watches the calls of one answer for a call that repeats an
// earlier one — same name, same arguments — which is how a model stuck in
// a loop fills its context with parallel calls: the loop guard, which
// sees tokens, finds such a list only after many copies, while the second
// copy already says it all.
type repeats struct {
	calls []repeatCall
}

type repeatCall struct {
	name string
	args []byte
}

// see records the call deltas among events.
func (r *repeats) see(events []tools.Event) {
	for _, e := range events {
		if e.Kind != tools.EventToolCall {
			continue
		}
		for len(r.calls) <= e.Call.Index {
			r.calls = append(r.calls, repeatCall{})
		}
		c := &r.calls[e.Call.Index]
		if e.Call.Name != "" {
			c.name = e.Call.Name
		}
		c.args = append(c.args, e.Call.Arguments...)
	}
}

// repeated returns the earlier call that call i (complete) repeats, or -1.
// Arguments compare as JSON values written compactly, so spacing does not
// hide a repeat and a different member order does not make one.
func (r *repeats) repeated(i int) int {
	if i >= len(r.calls) {
		return -1
	}
	want := compactJSON(r.calls[i].args)
	for j := range i {
		if r.calls[j].name == r.calls[i].name && bytes.Equal(compactJSON(r.calls[j].args), want) {
			return j
		}
	}
	return -1
}

func compactJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// repeatWarning is the warning an answer stopped at a repeated call
// carries.
func repeatWarning(i, j int, name string) string {
	return fmt.Sprintf("the answer stopped at tool call %d: it repeats call %d (%s with the same arguments), as a model caught in a loop does; set ChatRequest.AllowRepeatedCalls to let it go on", i, j, name)
}
