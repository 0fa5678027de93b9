package server

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/wire"
	"github.com/prism-local/prism/tools"
)

// recorder collects the events an output sends, as "type" or
// "type:detail" strings, and their payloads.
type recorder struct {
	names []string
	data  []map[string]any
}

func (r *recorder) send(e wire.Event) error {
	b, err := json.Marshal(e.Data)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m["type"] != e.Name || m["sequence_number"] != float64(len(r.names)) {
		return errors.New("event " + string(b) + " is not named " + e.Name + " or out of sequence")
	}
	r.names = append(r.names, e.Name)
	r.data = append(r.data, m)
	return nil
}

func content(text string) tools.Event { return tools.Event{Kind: tools.EventContent, Text: text} }
func thought(text string) tools.Event { return tools.Event{Kind: tools.EventReasoning, Text: text} }
func callDelta(d tools.CallDelta) tools.Event {
	return tools.Event{Kind: tools.EventToolCall, Call: d}
}

func TestOutputEvents(t *testing.T) {
	var rec recorder
	out := newOutput(rec.send)
	for _, e := range []tools.Event{
		thought("hm"), thought("m"), content("Hi"), content(""), content(" there"),
		callDelta(tools.CallDelta{Index: 0, ID: "call_a", Type: "function", Name: "f"}),
		callDelta(tools.CallDelta{Index: 0, Arguments: `{"a"`}), callDelta(tools.CallDelta{Index: 0, Arguments: `: 1}`}),
	} {
		out.feed(e)
	}
	out.close(wire.StatusCompleted)
	want := []string{
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
		"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
	}
	if !reflect.DeepEqual(rec.names, want) {
		t.Fatalf("events\n%q\nwant\n%q", rec.names, want)
	}
	if len(out.items) != 3 || out.items[0].Content[0].Text != "hmm" || out.items[0].Content[0].Type != "reasoning_text" ||
		out.items[1].Content[0].Text != "Hi there" || out.items[2].Arguments != `{"a": 1}` || out.items[2].CallID != "call_a" {
		t.Errorf("items %+v", out.items)
	}
	for _, it := range out.items {
		if it.Status != wire.StatusCompleted || it.ID == "" {
			t.Errorf("item %+v", it)
		}
	}
	if got := rec.data[len(rec.data)-2]["arguments"]; got != `{"a": 1}` {
		t.Errorf("arguments done %v", got)
	}
	if !strings.HasPrefix(out.items[0].ID, "rs_") || !strings.HasPrefix(out.items[1].ID, "msg_") || !strings.HasPrefix(out.items[2].ID, "fc_") {
		t.Errorf("ids %s %s %s", out.items[0].ID, out.items[1].ID, out.items[2].ID)
	}
}

func TestOutputAbandonedCall(t *testing.T) {
	var rec recorder
	out := newOutput(rec.send)
	out.feed(callDelta(tools.CallDelta{Index: 0, ID: "call_a", Name: "f"}))
	out.feed(callDelta(tools.CallDelta{Index: 0, Arguments: `{"a`}))
	out.feed(tools.Event{Kind: tools.EventWarning, Warning: tools.Warning{Index: 0, Message: "not JSON"}})
	out.feed(content(`<tool_call>{"a`))
	out.close(wire.StatusCompleted)
	if len(out.items) != 2 || out.items[0].Status != wire.StatusIncomplete || out.items[1].Content[0].Text != `<tool_call>{"a` {
		t.Errorf("items %+v", out.items)
	}
	if done := rec.data[3]; rec.names[3] != wire.EventItemDone || done["item"].(map[string]any)["status"] != "incomplete" {
		t.Errorf("events %q", rec.names)
	}
}

func TestOutputStopsSendingAfterAnError(t *testing.T) {
	calls := 0
	out := newOutput(func(wire.Event) error { calls++; return errors.New("gone") })
	out.feed(content("a"))
	out.feed(content("b"))
	if calls != 1 || out.err == nil || out.items[0].Type != wire.ItemMessage {
		t.Errorf("sent %d events after the first failed; err %v", calls, out.err)
	}
}

// A generation that fails after the headers ends with an error event and
// response.failed, whose error names the cause.
func TestFailResponse(t *testing.T) {
	var rec recorder
	out := newOutput(rec.send)
	req := &wire.ResponsesRequest{Model: "m"}
	resp := wire.NewResponse("resp_1", 1, req)
	out.feed(content("Hel"))
	failResponse(req, resp, out, &engine.ContextLengthError{ContextLength: 8, PromptTokens: 9})
	n := len(rec.names)
	if n < 2 || rec.names[n-2] != wire.EventError || rec.names[n-1] != wire.EventFailed {
		t.Fatalf("events %q", rec.names)
	}
	if e := rec.data[n-2]; e["code"] != CodeContextLength || e["param"] != "input" || e["message"] == "" {
		t.Errorf("error event %v", e)
	}
	failed := rec.data[n-1]["response"].(map[string]any)
	if failed["status"] != "failed" || failed["error"].(map[string]any)["code"] != CodeContextLength || len(failed["output"].([]any)) != 1 {
		t.Errorf("response.failed %v", failed)
	}
}

func TestResponsesError(t *testing.T) {
	req := &wire.ResponsesRequest{Model: "m", Include: []string{wire.IncludeEncryptedReasoning, wire.IncludeLogprobs}}
	for _, c := range []struct {
		err          error
		param, words string
	}{
		{&apiError{status: 400, code: "x", param: "response_format", message: "response_format together with tools"}, "text.format", "text.format together"},
		{&engine.InvalidRequestError{Param: "max_tokens", Message: "must be >= 0"}, "max_output_tokens", "invalid max_output_tokens"},
		{&engine.ContextLengthError{ContextLength: 8, PromptTokens: 9}, "input", "maximum context length"},
		{&apiError{status: 400, code: "x", param: "tool_choice", message: "no such tool"}, "tool_choice", "no such tool"},
		// Asked for through include: the field that asked is named, the
		// message left as it is.
		{&apiError{status: 400, code: "x", param: "logprobs", message: "logprobs are not served for Ollama models"}, "include[1]", "logprobs are not served"},
	} {
		e := classify(responsesError(req, c.err))
		if e.param != c.param || !strings.Contains(e.message, c.words) {
			t.Errorf("%v: param %q message %q", c.err, e.param, e.message)
		}
	}
	gone := &engine.ClientDisconnectedError{}
	if err := responsesError(req, gone); err != error(gone) {
		t.Errorf("a client that left became %v", err)
	}
}

func lpEntry(tok string) wire.TokenLogprob {
	return wire.TokenLogprob{Token: tok, Logprob: -1, Bytes: byteList([]byte(tok)), TopLogprobs: []wire.TopLogprob{}}
}

// tokensOf lists the entries' tokens of a recorded event or part.
func tokensOf(v any) []string {
	out := []string{}
	for _, e := range v.([]any) {
		out = append(out, e.(map[string]any)["token"].(string))
	}
	return out
}

// The entries go with the deltas of the message whose text they spell,
// even when they are decided a step after their text: with the next delta,
// or with a delta of no text before the message closes. Each message's
// part holds its own entries; output_text.done holds them all.
func TestOutputLogprobs(t *testing.T) {
	var rec recorder
	out := newOutput(rec.send)
	out.lp = &textLogprobs{}
	steps := []struct {
		entries []string
		events  []tools.Event
	}{
		{nil, []tools.Event{content("He")}},             // "He" not decided yet
		{[]string{"He"}, []tools.Event{content("llo")}}, // a step late, then with its own text
		{[]string{"llo", "", "é"}, []tools.Event{content("é")}},
		{nil, []tools.Event{content(" ")}}, // " <" is one token, the parser keeps "<"
		{[]string{" "}, []tools.Event{callDelta(tools.CallDelta{Index: 0, ID: "call_a", Name: "f"})}},
		{nil, []tools.Event{content("Bye")}},
		{[]string{"Bye"}, nil},
	}
	for _, st := range steps {
		var entries []wire.TokenLogprob
		for _, tok := range st.entries {
			entries = append(entries, lpEntry(tok))
		}
		out.addLogprobs(entries)
		for _, e := range st.events {
			out.feed(e)
		}
	}
	out.end(wire.StatusCompleted)
	var deltas [][]string
	var done [][]string
	var texts []string
	for i, name := range rec.names {
		switch name {
		case wire.EventTextDelta:
			deltas = append(deltas, tokensOf(rec.data[i]["logprobs"]))
			texts = append(texts, rec.data[i]["delta"].(string))
		case wire.EventTextDone:
			done = append(done, tokensOf(rec.data[i]["logprobs"]))
		}
	}
	wantTexts := []string{"He", "llo", "é", " ", "", "Bye", ""}
	wantDeltas := [][]string{{}, {"He"}, {"llo", "", "é"}, {}, {" "}, {}, {"Bye"}}
	if !reflect.DeepEqual(texts, wantTexts) || !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas %q with logprobs %q\nwant %q with %q", texts, deltas, wantTexts, wantDeltas)
	}
	if want := [][]string{{"He", "llo", "", "é", " "}, {"Bye"}}; !reflect.DeepEqual(done, want) {
		t.Errorf("done events' logprobs %q, want %q", done, want)
	}
	if len(out.items) != 3 || len(out.items[0].Content[0].Logprobs) != 5 || len(out.items[2].Content[0].Logprobs) != 1 {
		t.Errorf("items %+v", out.items)
	}

	// An entry decided after its message closed goes to the message's
	// part; the next message's entries are its own.
	out = newOutput(nil)
	out.lp = &textLogprobs{}
	out.feed(content("a"))
	out.feed(thought("hm"))
	out.addLogprobs([]wire.TokenLogprob{lpEntry("a")})
	out.feed(content("b"))
	out.addLogprobs([]wire.TokenLogprob{lpEntry("b")})
	out.end(wire.StatusCompleted)
	if len(out.items) != 3 || len(out.items[0].Content[0].Logprobs) != 1 || out.items[0].Content[0].Logprobs[0].Token != "a" ||
		len(out.items[2].Content[0].Logprobs) != 1 || out.items[2].Content[0].Logprobs[0].Token != "b" {
		t.Errorf("items %+v", out.items)
	}
}
