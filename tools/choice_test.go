package tools

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/reasoning"
)

var testTools = []json.RawMessage{
	json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "description": "z before a"}}`),
	json.RawMessage(`{"type":"function","function":{"name":"get_time","parameters":{}}}`),
}

func TestNarrow(t *testing.T) {
	tests := []struct {
		name      string
		choice    string
		tools     []json.RawMessage
		wantMode  ChoiceMode
		wantTools []json.RawMessage
		forced    string
		errParts  []string
	}{
		{name: "absent", choice: "", tools: testTools, wantMode: ChoiceAuto, wantTools: testTools},
		{name: "null", choice: "null", tools: testTools, wantMode: ChoiceAuto, wantTools: testTools},
		{name: "auto", choice: `"auto"`, tools: testTools, wantMode: ChoiceAuto, wantTools: testTools},
		{name: "none", choice: `"none"`, tools: testTools, wantMode: ChoiceNone},
		{name: "required", choice: `"required"`, tools: testTools, wantMode: ChoiceRequired, wantTools: testTools,
			forced: "<tool_call>\n{\"name\": \""},
		{name: "named", choice: `{"type": "function", "function": {"name": "get_time"}}`, tools: testTools,
			wantMode: ChoiceFunction, wantTools: testTools[1:], forced: "<tool_call>\n{\"name\": \"get_time\", \"arguments\": "},
		{name: "unknown name", choice: `{"type":"function","function":{"name":"launch"}}`, tools: testTools,
			errParts: []string{`"launch"`, "get_weather, get_time"}},
		{name: "named without tools", choice: `{"type":"function","function":{"name":"x"}}`,
			errParts: []string{"no tools were offered"}},
		{name: "required without tools", choice: `"required"`, errParts: []string{"needs at least one tool"}},
		{name: "other string", choice: `"any"`, tools: testTools, errParts: []string{AcceptedChoices}},
		{name: "responses shape", choice: `{"type":"function","name":"get_time"}`, tools: testTools, errParts: []string{AcceptedChoices}},
		{name: "wrong type", choice: `{"type":"tool","function":{"name":"get_time"}}`, tools: testTools, errParts: []string{AcceptedChoices}},
		{name: "number", choice: `3`, tools: testTools, errParts: []string{AcceptedChoices}},
		{name: "broken json", choice: `{"type":`, tools: testTools, errParts: []string{AcceptedChoices}},
		{name: "nameless tool", choice: `"auto"`, tools: []json.RawMessage{json.RawMessage(`{"type":"function"}`)}, errParts: []string{"tools[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Narrow(json.RawMessage(tt.choice), tt.tools, FormatHermes)
			if tt.errParts != nil {
				var te *Error
				if !errors.As(err, &te) || te.Code() != errcode.InvalidRequest {
					t.Fatalf("error %v, want *Error with %s", err, errcode.InvalidRequest)
				}
				for _, part := range tt.errParts {
					if !strings.Contains(te.Message, part) {
						t.Errorf("message %q lacks %q", te.Message, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.Choice.Mode != tt.wantMode || !reflect.DeepEqual(n.Tools, tt.wantTools) || n.Forced != tt.forced {
				t.Fatalf("got %+v", n)
			}
			// Raw bytes are passed through untouched (key order kept).
			for i := range n.Tools {
				if string(n.Tools[i]) != string(tt.wantTools[i]) {
					t.Fatalf("tool changed: %s", n.Tools[i])
				}
			}
		})
	}
}

// TestForcedPrefixParses checks, for every format, that the forced text plus
// a plausible continuation is parsed as the demanded call.
func TestForcedPrefixParses(t *testing.T) {
	named := json.RawMessage(`{"type":"function","function":{"name":"get_weather"}}`)
	tests := []struct {
		format   Format
		named    string // continuation after the named prefix
		required string // continuation after the "required" prefix
	}{
		{FormatHermes, "{\"city\": \"Paris\"}}\n</tool_call>", "get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
		{FormatLlama3, "{\"city\": \"Paris\"}}", "get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
		{FormatMistral, "{\"city\": \"Paris\"}}]", "get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
		{FormatDeepSeekV3, "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
		{FormatHarmony, "{\"city\": \"Paris\"}<|call|>", "get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>"},
	}
	want := []Call{{ID: "call_0", Name: "get_weather", Arguments: `{"city": "Paris"}`}}
	for _, tt := range tests {
		n, err := Narrow(named, testTools, tt.format)
		if err != nil {
			t.Fatal(err)
		}
		got := Parse(tt.format, n.Forced+tt.named, WithIDs(seqIDs))
		if !reflect.DeepEqual(got.Calls, want) || got.Content != "" {
			t.Errorf("%s named: %q parsed to %+v", tt.format, n.Forced+tt.named, got)
		}
		if err := n.Verify(got.Calls); err != nil {
			t.Errorf("%s named: Verify: %v", tt.format, err)
		}
		r, err := Narrow(json.RawMessage(`"required"`), testTools, tt.format)
		if err != nil {
			t.Fatal(err)
		}
		got = Parse(tt.format, r.Forced+tt.required, WithIDs(seqIDs))
		if !reflect.DeepEqual(got.Calls, want) || got.Content != "" {
			t.Errorf("%s required: %q parsed to %+v", tt.format, r.Forced+tt.required, got)
		}
	}
}

func TestForcedAfter(t *testing.T) {
	n, err := Narrow(json.RawMessage(`"required"`), testTools, FormatHermes)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.ForcedAfter("<|im_start|>assistant\n"); got != n.Forced {
		t.Errorf("closed prompt: %q", got)
	}
	open := "<|im_start|>assistant\n<think>\n"
	got := n.ForcedAfter(open)
	if got != "</think>\n\n"+n.Forced {
		t.Errorf("open prompt: %q", got)
	}
	// The parser then sees the call, not reasoning.
	res := Parse(FormatHermes, got+`get_time", "arguments": {}}</tool_call>`, WithIDs(seqIDs), WithReasoning(reasoning.WithPrompt(open)))
	if len(res.Calls) != 1 || res.Calls[0].Name != "get_time" || !res.HasReasoning {
		t.Errorf("parsed %+v", res)
	}
}

func TestVerify(t *testing.T) {
	named, _ := Narrow(json.RawMessage(`{"type":"function","function":{"name":"get_time"}}`), testTools, FormatHermes)
	var te *Error
	if err := named.Verify(nil); !errors.As(err, &te) || te.Code() != CodeChoiceUnsatisfied {
		t.Errorf("no calls: %v", err)
	}
	if err := named.Verify([]Call{{Name: "get_weather"}}); err == nil {
		t.Error("wrong call accepted")
	}
	auto, _ := Narrow(nil, testTools, FormatHermes)
	if err := auto.Verify(nil); err != nil {
		t.Errorf("auto: %v", err)
	}
}
