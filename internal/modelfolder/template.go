package modelfolder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// ChatTemplates are the chat templates a folder declares.
//
// The precedence is Hugging Face transformers' (4.57, unchanged in 5.x,
// PreTrainedTokenizerBase._from_pretrained): template files win over the
// tokenizer config. When chat_template.jinja or any
// additional_chat_templates/<name>.jinja exists, the files are the
// templates — chat_template.jinja as "default", each other file under its
// name — and tokenizer_config.json's chat_template is not used at all, not
// even for names the files do not give. Otherwise tokenizer_config.json's
// chat_template applies: one string (the default) or a list of
// {name, template}.
type ChatTemplates struct {
	// Named holds the templates by name; the default template (the
	// one-string form, or chat_template.jinja) is "default". Nil when the
	// folder has none.
	Named map[string]string
	// Source is the file the templates came from, relative to the folder:
	// chat_template.jinja, additional_chat_templates or
	// tokenizer_config.json ("" when none).
	Source string
}

// Default is the default template, "" when there is none.
func (t ChatTemplates) Default() string { return t.Named["default"] }

// ChatTemplates reads the folder's chat templates with transformers'
// precedence (see ChatTemplates the type). A folder without any gives the
// zero value.
func (f *Folder) ChatTemplates() (ChatTemplates, error) {
	files, err := f.templateFiles()
	if err != nil || files.Source != "" {
		return files, err
	}
	data, err := f.ReadOptional(TokenizerConfigFile)
	if err != nil || data == nil {
		return ChatTemplates{}, err
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return ChatTemplates{}, &ConfigError{File: f.Path(TokenizerConfigFile), Err: err}
	}
	t, err := ParseChatTemplate(cfg.ChatTemplate)
	if err != nil {
		return ChatTemplates{}, &ConfigError{File: f.Path(TokenizerConfigFile), Field: "chat_template", Err: err}
	}
	if t.Named != nil {
		t.Source = TokenizerConfigFile
	}
	return t, nil
}

// templateFiles reads chat_template.jinja and additional_chat_templates/.
func (f *Folder) templateFiles() (ChatTemplates, error) {
	var t ChatTemplates
	add := func(name, source string, body []byte) {
		if t.Named == nil {
			t.Named, t.Source = map[string]string{}, source
		}
		t.Named[name] = string(body)
	}
	def, err := f.ReadOptional(ChatTemplateFile)
	if err != nil {
		return t, err
	}
	if def != nil {
		add("default", ChatTemplateFile, def)
	}
	dir := f.Path(ChatTemplatesDir)
	entries, err := f.readDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return t, &ConfigError{File: dir, Err: err}
	}
	for _, e := range entries { // sorted by name
		name, ok := strings.CutSuffix(e.Name(), ".jinja")
		if !ok || !f.isFile(filepath.Join(dir, e.Name())) {
			continue
		}
		b, err := f.readFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return t, &ConfigError{File: filepath.Join(dir, e.Name()), Err: err}
		}
		add(name, ChatTemplatesDir, b)
	}
	return t, nil
}

// ParseChatTemplate reads the value of tokenizer_config.json's
// chat_template field: absent or null (no template), a string (the
// default), or a list of {"name", "template"} objects.
func ParseChatTemplate(raw json.RawMessage) (ChatTemplates, error) {
	var t ChatTemplates
	if len(raw) == 0 || string(raw) == "null" {
		return t, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		t.Named = map[string]string{"default": one}
		return t, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return t, fmt.Errorf("want a string or a list of {name, template}: %w", err)
	}
	t.Named = make(map[string]string, len(list))
	for _, e := range list {
		t.Named[e.Name] = e.Template
	}
	return t, nil
}
