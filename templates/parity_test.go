package templates

import (
	"errors"
	"testing"
)

// TestParity renders every kept case and compares with the reference's
// output byte for byte. Where the reference failed, Prism must fail with
// the typed error and the exact message parityErrors gives: for a raise,
// the template's own message, which is the reference's too.
func TestParity(t *testing.T) {
	fixture := map[string]string{} // family -> template in the fixture
	failed := map[string]bool{}    // vectors the reference failed on
	for _, v := range loadVectors(t) {
		failed[v.Name] = v.Error != ""
		t.Run(v.Name, func(t *testing.T) {
			if why, ok := knownDivergences[v.Name]; ok {
				t.Skip(why)
			}
			if v.Family != "" {
				// The vector must still hold the fixture's template.
				src, ok := fixture[v.Family]
				if !ok {
					src, _, _ = familyTemplate(t, v.Family)
					fixture[v.Family] = src
				}
				if src != v.Template {
					t.Fatalf("the %s fixture's template changed; regenerate with -update-vectors", v.Family)
				}
			}
			tpl, err := load(v.Template)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			got, err := tpl.render(t.Context(), v.Input)
			if v.Error != "" {
				checkParityError(t, v, got, err)
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if got != v.Output {
				t.Fatalf("output differs from the reference\n got: %q\nwant: %q", got, v.Output)
			}
		})
	}
	for name := range parityErrors {
		if !failed[name] {
			t.Errorf("parityErrors names %s, which is not a vector the reference failed on", name)
		}
	}
}

// parityError is what Prism answers where the reference failed.
type parityError struct {
	raised bool   // the template called raise_exception
	error  string // Prism's exact error text
}

// parityErrors are Prism's answers to every vector the reference failed
// on. The reference's own words are in the vector; where the template
// raised, Prism's message must equal them. Where the reference failed by
// itself, its message names its own JavaScript types (ArrayValue,
// UndefinedValue), so Prism's message is pinned here instead, and both
// sides must fail for the same reason.
var parityErrors = map[string]parityError{
	"gemma3/role_alternation_broken": {raised: true, error: "chat template raised: Conversation roles must alternate user/assistant/user/assistant/..."},
	"gemma3/tool_round_trip":         {raised: true, error: "chat template raised: Invalid content type"},
	"dialect/raise":                  {raised: true, error: "chat template raised: Only one message, please: 4"},
	// The reference: "Cannot call something that is not a function: got
	// UndefinedValue" — content parts have no startswith.
	"qwen3/content_parts": {error: "chat template render failed: 'startswith' is undefined"},
	// The reference: "Unknown ArrayValue filter: trim".
	"llama3_1/content_parts": {error: "chat template render failed: cannot trim a list"},
	// The reference: `Cannot apply filter "trim" to type: NullValue` — the
	// assistant turn with tool calls has null content.
	"llama3_1/tool_round_trip": {error: "chat template render failed: cannot trim a NoneType"},
}

func checkParityError(t *testing.T, v vector, got string, err error) {
	t.Helper()
	want, ok := parityErrors[v.Name]
	if !ok {
		t.Fatalf("the reference failed with %q and parityErrors has no answer for it; Prism gave %q, %v", v.Error, got, err)
	}
	var te *TemplateError
	if !errors.As(err, &te) {
		t.Fatalf("reference failed with %q; Prism gave output %q, err %v", v.Error, got, err)
	}
	if te.Raised != want.raised || err.Error() != want.error {
		t.Fatalf("got %q (raised %v), want %q (raised %v)", err.Error(), te.Raised, want.error, want.raised)
	}
	if want.raised && te.Message != v.Error {
		t.Fatalf("raised %q, the reference raised %q", te.Message, v.Error)
	}
}

// knownDivergences are kept cases where the reference departs from Jinja
// as transformers' Python renderer runs it, and Prism follows Jinja.
var knownDivergences = map[string]string{
	"deepseek_v3/content_parts": "the template concatenates a list of parts to a string: the reference prints the " +
		"parts as JSON joined by commas; Jinja refuses str + list, and so does Prism's evaluator",
}
