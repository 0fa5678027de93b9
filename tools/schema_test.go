package tools

import (
	"encoding/json"
	"testing"
)

const weatherSchema = `{"type": "object", "properties": {
	"city": {"type": "string"},
	"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
	"days": {"type": "array", "items": {"type": "integer"}},
	"detail": {"type": "object", "properties": {"hourly": {"type": "boolean"}}, "additionalProperties": false},
	"note": {"type": ["string", "null"]}
}, "required": ["city"], "additionalProperties": false}`

func TestSchemaCheck(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(weatherSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want Viability
	}{
		{``, Viable},
		{`{`, Viable},
		{`{"ci`, Viable},
		{`{"city": "Par`, Viable},
		{`{"city": "Paris"}`, Complete},
		{`{"city": "Paris"} `, Complete},
		{`{"city": "Paris"}x`, Invalid},
		{`{}`, Invalid},         // city is required
		{`{"town`, Invalid},     // no such property
		{`{"city": 5`, Invalid}, // wrong type
		{`{"city": "Paris", "unit": "cel`, Viable},
		{`{"city": "Paris", "unit": "kel`, Invalid}, // not in enum
		{`{"city": "Paris", "unit": "celsius"}`, Complete},
		{`{"city": "Paris", "days": [1, 2`, Viable},
		{`{"city": "Paris", "days": [1.5`, Invalid}, // integer items
		{`{"city": "Paris", "days": [1, 2]}`, Complete},
		{`{"city": "Paris", "detail": {"hourly": tr`, Viable},
		{`{"city": "Paris", "detail": {"hourly": "yes"`, Invalid},
		{`{"city": "Paris", "detail": {"daily"`, Invalid},
		{`{"city": "Paris", "note": null}`, Complete},
		{`{"city": "Paris", "note": nul`, Viable},
		{`{"city": "Paris", "city": "Rome"}`, Invalid}, // duplicate key
		{`{"city": "Pa\"ris"}`, Complete},
		{`{"city": "Paris",}`, Invalid},
		{`[`, Invalid},
	}
	for _, tt := range tests {
		if got := s.Check(tt.text); got != tt.want {
			t.Errorf("Check(%s) = %s, want %s", tt.text, got, tt.want)
		}
	}
}

func TestSchemaAnyAndTool(t *testing.T) {
	s, err := ToolSchema(json.RawMessage(`{"type":"function","function":{"name":"f"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{`{"a": [1, {"b": null}], "c": -0.5e+3}`, `{}`} {
		if got := s.Check(text); got != Complete {
			t.Errorf("any schema: Check(%s) = %s", text, got)
		}
	}
	if got := s.Check(`{"a": 01}`); got != Invalid {
		t.Errorf("leading zero: %s", got)
	}
}

// FuzzSchemaCheck checks that Check never panics, that a text it calls
// Complete is valid JSON, and that every prefix of a Complete text is at
// least Viable.
func FuzzSchemaCheck(f *testing.F) {
	f.Add(`{"city": "Paris", "days": [1, 2], "detail": {"hourly": true}}`)
	f.Add(`{"city": "P\u00e9ris", "unit": "celsius", "note": null}`)
	s, err := CompileSchema(json.RawMessage(weatherSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if s.Check(text) != Complete {
			return
		}
		if !json.Valid([]byte(text)) {
			t.Fatalf("Complete but not JSON: %q", text)
		}
		for i := range len(text) {
			if s.Check(text[:i]) == Invalid {
				t.Fatalf("prefix %q of complete %q is invalid", text[:i], text)
			}
		}
	})
}

// FuzzCompileSchema checks that no schema text makes compiling or checking
// panic.
func FuzzCompileSchema(f *testing.F) {
	f.Add(weatherSchema, `{"city": "x"}`)
	f.Add(`{"type": ["array"], "items": {"enum": [1, "a", null]}}`, `[1, "a"`)
	f.Fuzz(func(t *testing.T, schema, text string) {
		s, err := CompileSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		_ = s.Check(text)
	})
}
