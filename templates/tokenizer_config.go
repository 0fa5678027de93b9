package templates

import (
	"encoding/json"
	"fmt"

	"github.com/prism-local/prism/internal/modelfolder"
)

// ChatTemplates are the chat templates and special tokens a model folder
// declares. Which templates apply follows Hugging Face transformers (see
// docs/templates.md): chat_template.jinja (and
// additional_chat_templates/<name>.jinja) when the folder has them, else
// tokenizer_config.json's chat_template, as one string or as a list of
// named templates ("default", "tool_use", ...).
type ChatTemplates struct {
	// Named maps template names to sources; the single-string form is
	// stored as "default".
	Named map[string]string
	// BOSToken and EOSToken are the special tokens' text ("" if unset).
	BOSToken string
	// EOSToken is the end-of-sequence token's text.
	EOSToken string
}

// ReadTokenizerConfig reads the chat templates and special tokens of the
// model folder dir.
func ReadTokenizerConfig(dir string) (*ChatTemplates, error) {
	f, err := modelfolder.Read(dir)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer config: %w", err)
	}
	data, err := f.ReadOptional(modelfolder.TokenizerConfigFile)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer config: %w", err)
	}
	c := &ChatTemplates{}
	if data != nil {
		if c, err = ParseTokenizerConfig(data); err != nil {
			return nil, err
		}
	}
	found, err := f.ChatTemplates()
	if err != nil {
		return nil, fmt.Errorf("read chat templates: %w", err)
	}
	c.Named = found.Named
	if c.Named == nil {
		c.Named = map[string]string{}
	}
	return c, nil
}

// ParseTokenizerConfig reads the chat templates and special tokens from
// the contents of a tokenizer_config.json.
func ParseTokenizerConfig(data []byte) (*ChatTemplates, error) {
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOSToken     json.RawMessage `json:"bos_token"`
		EOSToken     json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse tokenizer config: %w", err)
	}
	found, err := modelfolder.ParseChatTemplate(cfg.ChatTemplate)
	if err != nil {
		return nil, fmt.Errorf("parse tokenizer config: chat_template: %w", err)
	}
	c := &ChatTemplates{Named: found.Named, BOSToken: modelfolder.SpecialToken(cfg.BOSToken), EOSToken: modelfolder.SpecialToken(cfg.EOSToken)}
	if c.Named == nil {
		c.Named = map[string]string{}
	}
	return c, nil
}
