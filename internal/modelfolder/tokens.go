package modelfolder

import "encoding/json"

// SpecialToken reads a special-token field of tokenizer_config.json
// (bos_token, eos_token, ...): a string, an AddedToken object (its
// content), or null and anything else as "".
func SpecialToken(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content
	}
	return ""
}
