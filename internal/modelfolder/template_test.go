package modelfolder

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"
)

func TestChatTemplatesPrecedence(t *testing.T) {
	listConfig := `{"chat_template":[{"name":"default","template":"D"},{"name":"tool_use","template":"T"}]}`
	cases := []struct {
		name   string
		files  map[string]string
		want   map[string]string
		source string
	}{
		{"none", map[string]string{TokenizerConfigFile: `{"eos_token":"x"}`}, nil, ""},
		{"no tokenizer config", map[string]string{}, nil, ""},
		{"config string", map[string]string{TokenizerConfigFile: `{"chat_template":"S"}`}, map[string]string{"default": "S"}, TokenizerConfigFile},
		{"config list", map[string]string{TokenizerConfigFile: listConfig}, map[string]string{"default": "D", "tool_use": "T"}, TokenizerConfigFile},
		{"jinja only", map[string]string{ChatTemplateFile: "J"}, map[string]string{"default": "J"}, ChatTemplateFile},
		// transformers: the file clobbers every template of the config,
		// tool_use included.
		{"jinja over config list", map[string]string{TokenizerConfigFile: listConfig, ChatTemplateFile: "J"}, map[string]string{"default": "J"}, ChatTemplateFile},
		{"jinja over config string", map[string]string{TokenizerConfigFile: `{"chat_template":"S"}`, ChatTemplateFile: "J"}, map[string]string{"default": "J"}, ChatTemplateFile},
		{"jinja and additional", map[string]string{TokenizerConfigFile: listConfig, ChatTemplateFile: "J",
			ChatTemplatesDir + "/tool_use.jinja": "TJ", ChatTemplatesDir + "/notes.txt": "x"},
			map[string]string{"default": "J", "tool_use": "TJ"}, ChatTemplateFile},
		{"additional only", map[string]string{TokenizerConfigFile: listConfig, ChatTemplatesDir + "/rag.jinja": "R"},
			map[string]string{"rag": "R"}, ChatTemplatesDir},
		{"empty jinja still wins", map[string]string{TokenizerConfigFile: `{"chat_template":"S"}`, ChatTemplateFile: ""}, map[string]string{"default": ""}, ChatTemplateFile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Read(writeFiles(t, c.files))
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.ChatTemplates()
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.Named, c.want) || got.Source != c.source {
				t.Fatalf("templates %v from %q, want %v from %q", got.Named, got.Source, c.want, c.source)
			}
			if got.Default() != c.want["default"] {
				t.Fatalf("default %q", got.Default())
			}
		})
	}
}

func TestChatTemplatesErrors(t *testing.T) {
	for name, cfg := range map[string]string{
		"not json":       `{`,
		"template a map": `{"chat_template":{"default":"x"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f, _ := Read(writeFiles(t, map[string]string{TokenizerConfigFile: cfg}))
			_, err := f.ChatTemplates()
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func FuzzParseChatTemplate(f *testing.F) {
	f.Add([]byte(`"{{ messages }}"`))
	f.Add([]byte(`[{"name":"default","template":"a"},{"name":"tool_use","template":"b"},{"name":"default","template":"c"}]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"name":3}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ParseChatTemplate(json.RawMessage(raw))
		if err != nil {
			return
		}
		if got.Named == nil && got.Default() != "" {
			t.Fatalf("default without a map: %+v", got)
		}
	})
}
