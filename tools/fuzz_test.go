package tools

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
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
