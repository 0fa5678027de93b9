package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ChatTemplates are the chat templates and special tokens a model folder
// declares: tokenizer_config.json's chat_template, as one string or as a
// list of named templates ("default", "tool_use", ...), and a
// chat_template.jinja file beside it, which takes precedence as the
// default template.
type ChatTemplates struct {
	// Named maps template names to sources; the single-string form is
	// stored as "default".
	Named map[string]string
	// BOSToken and EOSToken are the special tokens' text ("" if unset).
	BOSToken string
	// EOSToken is the end-of-sequence token's text.
	EOSToken string
}

// ReadTokenizerConfig reads dir/tokenizer_config.json and, if present,
// dir/chat_template.jinja.
func ReadTokenizerConfig(dir string) (*ChatTemplates, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read tokenizer config: %w", err)
	}
	var c *ChatTemplates
	if data != nil {
		if c, err = ParseTokenizerConfig(data); err != nil {
			return nil, err
		}
	} else {
		c = &ChatTemplates{Named: map[string]string{}}
	}
	jinja, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
	switch {
	case err == nil:
		c.Named["default"] = string(jinja)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read chat_template.jinja: %w", err)
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
	c := &ChatTemplates{Named: map[string]string{}, BOSToken: tokenText(cfg.BOSToken), EOSToken: tokenText(cfg.EOSToken)}
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return c, nil
	}
	var one string
	if err := json.Unmarshal(cfg.ChatTemplate, &one); err == nil {
		c.Named["default"] = one
		return c, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &list); err != nil {
		return nil, fmt.Errorf("parse tokenizer config: chat_template is neither a string nor a list of named templates: %w", err)
	}
	for _, t := range list {
		c.Named[t.Name] = t.Template
	}
	return c, nil
}

// tokenText reads a special token given as a string or as an AddedToken
// object {"content": ...}.
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}
