package tools

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomJSON writes a random JSON value of bounded depth, with the spacing
// styles models use and strings that contain markers, quotes and unicode.
func randomJSON(r *rand.Rand, depth int) string {
	strs := []string{"Paris", "a \\\"quoted\\\" word", "</tool_call>", "<|call|>", "[TOOL_CALLS]", "日本語 😀", "", "line\\nbreak", "\\u00e9", "}{][", "```"}
	k := r.IntN(6)
	if depth <= 0 && k >= 4 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return `"` + strs[r.IntN(len(strs))] + `"`
	case 1:
		return fmt.Sprint(r.IntN(2000) - 1000)
	case 2:
		return []string{"true", "false", "null", "-1.5e3", "0.25"}[r.IntN(5)]
	case 3, 4:
		return randomObject(r, depth-1)
	default:
		var b strings.Builder
		b.WriteString("[")
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString([]string{",", ", ", " ,\n"}[r.IntN(3)])
			}
			b.WriteString(randomJSON(r, depth-1))
		}
		b.WriteString("]")
		return b.String()
	}
}

func randomObject(r *rand.Rand, depth int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range r.IntN(4) {
		if i > 0 {
			b.WriteString([]string{",", ", ", ",\n  "}[r.IntN(3)])
		}
		fmt.Fprintf(&b, `"k%d":%s%s`, i, []string{"", " "}[r.IntN(2)], randomJSON(r, depth))
	}
	b.WriteString("}")
	return b.String()
}

// writeCalls renders calls the way each family's model writes them.
func writeCalls(f Format, calls []Call) string {
	var b strings.Builder
	switch f {
	case FormatHermes:
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", c.Name, c.Arguments)
		}
	case FormatLlama3:
		for i, c := range calls {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "{\"name\": %q, \"parameters\": %s}", c.Name, c.Arguments)
		}
	case FormatMistral:
		b.WriteString("[TOOL_CALLS][")
		for i, c := range calls {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{\"name\": %q, \"arguments\": %s}", c.Name, c.Arguments)
		}
		b.WriteString("]")
	case FormatDeepSeekV3:
		b.WriteString(dsCallsBegin)
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%sfunction%s%s\n```json\n%s\n```%s", dsCallBegin, dsSep, c.Name, c.Arguments, dsCallEnd)
		}
		b.WriteString(dsCallsEnd)
	case FormatHarmony:
		for _, c := range calls {
			fmt.Fprintf(&b, "<|start|>assistant<|channel|>commentary to=functions.%s <|constrain|>json<|message|>%s<|call|>", c.Name, c.Arguments)
		}
	}
	return b.String()
}

// TestGeneratedCalls writes random valid calls in every format, with a think
// block (or analysis message) in front, and checks that any chunking parses
// them back exactly.
func TestGeneratedCalls(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	formats := []Format{FormatHermes, FormatLlama3, FormatMistral, FormatDeepSeekV3, FormatHarmony}
	for range 300 {
		f := formats[r.IntN(len(formats))]
		var calls []Call
		for i := range 1 + r.IntN(3) {
			args := randomObject(r, 3)
			if !json.Valid([]byte(args)) {
				t.Fatalf("generator wrote invalid JSON %s", args)
			}
			calls = append(calls, Call{ID: seqIDs(i), Name: fmt.Sprintf("tool_%d", r.IntN(100)), Arguments: args})
		}
		text := writeCalls(f, calls)
		thinking := ""
		switch f {
		case FormatHarmony:
			text = "<|channel|>analysis<|message|>Plan: call tools.<|end|>" + text
			thinking = "Plan: call tools."
		case FormatHermes, FormatDeepSeekV3:
			text = "<think>\nPlan: call tools.\n</think>\n\n" + text
			thinking = "\nPlan: call tools.\n"
		}
		for range 5 {
			got := parseChunks(f, randomChunks(r, text))
			if !reflect.DeepEqual(got.Calls, calls) || got.Content != "" || got.Reasoning != thinking || len(got.Warnings) != 0 {
				t.Fatalf("%s: %q\nparsed to %+v\nwant calls %+v", f, text, got, calls)
			}
		}
	}
}
