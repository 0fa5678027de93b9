package tools

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/prism-local/prism/errcode"
)

// FuzzParse checks that no input makes the parser panic, that any chunking
// of a text gives the same result as the whole text, and that every call it
// returns has a name and JSON-object arguments.
func FuzzParse(f *testing.F) {
	for i, tt := range parseCases {
		f.Add(uint8(tt.format), tt.text, uint64(i))
	}
	f.Fuzz(func(t *testing.T, format uint8, text string, seed uint64) {
		fm := Format(format % uint8(FormatHarmony+1))
		whole := Parse(fm, text, WithIDs(seqIDs))
		r := rand.New(rand.NewPCG(seed, ^seed))
		got := parseChunks(fm, randomChunks(r, text))
		if !reflect.DeepEqual(normal(got), normal(whole)) {
			t.Fatalf("format %s: chunked\n%+v\nwhole\n%+v", fm, got, whole)
		}
		// Nothing is dropped: an answer without calls or reasoning comes
		// back whole as content (harmony framing aside).
		if fm != FormatHarmony && len(whole.Calls) == 0 && !whole.HasReasoning && whole.Content != text {
			t.Fatalf("format %s: content %q, want the whole text %q", fm, whole.Content, text)
		}
		for _, c := range whole.Calls {
			if c.Name == "" {
				t.Fatalf("call without a name: %+v", c)
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil {
				t.Fatalf("call arguments %q are not a JSON object: %v", c.Arguments, err)
			}
		}
	})
}

// normal makes empty and nil slices compare equal.
func normal(r Result) Result {
	if len(r.Calls) == 0 {
		r.Calls = nil
	}
	if len(r.Warnings) == 0 {
		r.Warnings = nil
	}
	return r
}

// FuzzNarrow checks that no tool_choice or tool list makes Narrow panic,
// that every error is an *Error with a code, and that a successful named
// choice leaves exactly one tool.
func FuzzNarrow(f *testing.F) {
	f.Add(`"auto"`, `{"type":"function","function":{"name":"a"}}`)
	f.Add(`{"type":"function","function":{"name":"a"}}`, `{"type":"function","function":{"name":"a"}}`)
	f.Add(`{"type":"function","function":{"name":"b"}}`, `{"type":"function","function":{"name":"a"}}`)
	f.Add(`"required"`, ``)
	f.Add(`[1,2]`, `{}`)
	f.Fuzz(func(t *testing.T, choice, tool string) {
		var tl []json.RawMessage
		if tool != "" {
			tl = append(tl, json.RawMessage(tool))
		}
		for fm := FormatNone; fm <= FormatHarmony; fm++ {
			n, err := Narrow(json.RawMessage(choice), tl, fm)
			if err != nil {
				var te *Error
				if !errors.As(err, &te) || te.Code() != errcode.InvalidRequest {
					t.Fatalf("error %v is not an invalid_request_error", err)
				}
				continue
			}
			if n.Choice.Mode == ChoiceFunction && len(n.Tools) != 1 {
				t.Fatalf("named choice left %d tools", len(n.Tools))
			}
		}
	})
}
