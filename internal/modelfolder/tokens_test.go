package modelfolder

import (
	"encoding/json"
	"testing"
)

func TestSpecialToken(t *testing.T) {
	for raw, want := range map[string]string{
		`"<s>"`: "<s>",
		`{"content":"<|im_end|>","lstrip":false}`: "<|im_end|>",
		`null`: "",
		`7`:    "",
		``:     "",
	} {
		if got := SpecialToken(json.RawMessage(raw)); got != want {
			t.Errorf("SpecialToken(%s) = %q, want %q", raw, got, want)
		}
	}
}
