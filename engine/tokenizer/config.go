package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/prism-local/prism/internal/modelfolder"
)

// Config is the parsed tokenizer_config.json.
type Config struct {
	// BOSToken, EOSToken, PADToken and UNKToken are the configured token
	// strings ("" when unset); AddedToken objects are reduced to their content.
	BOSToken, EOSToken, PADToken, UNKToken string
	// AddBOSToken and AddEOSToken are add_bos_token / add_eos_token. They are
	// informational: EncodeWithSpecial follows the post-processor, as the
	// reference does.
	AddBOSToken, AddEOSToken bool
	// ChatTemplate is the default chat template and ChatTemplates every
	// template by name (the default as "default"), with the precedence of
	// internal/modelfolder, the same for every reader of the folder:
	// chat_template.jinja (and additional_chat_templates/) when present,
	// else tokenizer_config.json's chat_template, a string or a list of
	// named templates. See docs/templates.md.
	ChatTemplate  string
	ChatTemplates map[string]string
	// AddedTokensDecoder is added_tokens_decoder, keyed by id.
	AddedTokensDecoder map[int32]AddedToken
	// AdditionalSpecialTokens lists additional_special_tokens (strings only).
	AdditionalSpecialTokens []string
	// CleanUpTokenizationSpaces is clean_up_tokenization_spaces (true when
	// absent, as in the reference).
	CleanUpTokenizationSpaces bool
	// ModelMaxLength is model_max_length (0 when absent; huge values are
	// clamped to math.MaxInt64).
	ModelMaxLength int64
	// TokenizerClass is tokenizer_class.
	TokenizerClass string
	// Raw holds every top-level field as it appears in the file.
	Raw map[string]json.RawMessage
}

func parseConfig(f *modelfolder.Folder) (*Config, error) {
	data, err := f.ReadRequired(modelfolder.TokenizerConfigFile, "the tokenizer's special tokens")
	if err != nil {
		return nil, err
	}
	c := &Config{CleanUpTokenizationSpaces: true}
	if err := json.Unmarshal(data, &c.Raw); err != nil {
		return nil, err
	}
	r := c.Raw
	c.BOSToken = modelfolder.SpecialToken(r["bos_token"])
	c.EOSToken = modelfolder.SpecialToken(r["eos_token"])
	c.PADToken = modelfolder.SpecialToken(r["pad_token"])
	c.UNKToken = modelfolder.SpecialToken(r["unk_token"])
	for key, dst := range map[string]*bool{
		"add_bos_token":                &c.AddBOSToken,
		"add_eos_token":                &c.AddEOSToken,
		"clean_up_tokenization_spaces": &c.CleanUpTokenizationSpaces,
	} {
		if v, ok := r[key]; ok && !isNull(v) {
			if err := json.Unmarshal(v, dst); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	tmpl, err := f.ChatTemplates()
	if err != nil {
		return nil, err
	}
	c.ChatTemplate, c.ChatTemplates = tmpl.Default(), tmpl.Named
	if v, ok := r["added_tokens_decoder"]; ok && !isNull(v) {
		var m map[string]AddedToken
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, fmt.Errorf("added_tokens_decoder: %w", err)
		}
		c.AddedTokensDecoder = make(map[int32]AddedToken, len(m))
		for k, tok := range m {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("added_tokens_decoder: id %q: %w", k, err)
			}
			tok.ID = int32(id)
			c.AddedTokensDecoder[int32(id)] = tok
		}
	}
	if v, ok := r["additional_special_tokens"]; ok && !isNull(v) {
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err == nil {
			for _, e := range list {
				var s string
				if json.Unmarshal(e, &s) == nil {
					c.AdditionalSpecialTokens = append(c.AdditionalSpecialTokens, s)
				}
			}
		}
	}
	if v, ok := r["model_max_length"]; ok && !isNull(v) {
		var f float64
		if json.Unmarshal(v, &f) == nil {
			if f >= math.MaxInt64 {
				c.ModelMaxLength = math.MaxInt64
			} else if f > 0 {
				c.ModelMaxLength = int64(f)
			}
		}
	}
	if v, ok := r["tokenizer_class"]; ok {
		_ = json.Unmarshal(v, &c.TokenizerClass)
	}
	return c, nil
}
