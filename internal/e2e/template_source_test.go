//go:build cgo

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/templates"
)

// TestTemplateSourceSameEverywhere: a folder with both chat_template.jinja
// and a different template in tokenizer_config.json renders the .jinja
// file's template through every reader — prism.LoadChat, the tokenizer
// prism.Open loads, templates.ReadTokenizerConfig and engine/tokenizer's
// config — as transformers does (docs/templates.md).
func TestTemplateSourceSameEverywhere(t *testing.T) {
	dir := scriptedQwen3(t, "optimum")
	const fromFile = "{% for m in messages %}[file:{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}"
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(fromFile), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), `"chat_template"`) {
		t.Fatal("the fixture's tokenizer_config.json has no chat_template of its own")
	}

	in := templates.Input{Messages: []templates.Message{{Role: "user", Content: templates.Text("hi")}}}
	render := func(chat *templates.Chat) string {
		t.Helper()
		if err := chat.Err(); err != nil {
			t.Fatal(err)
		}
		p, err := chat.Render(t.Context(), in)
		if err != nil || p.Fallback {
			t.Fatalf("render: %v (fallback %v)", err, p.Fallback)
		}
		return p.Text
	}
	withSource := func(source string) *templates.Chat {
		return templates.NewChat(dir, templates.ChatTemplates{Named: map[string]string{"default": source}, EOSToken: "<|im_end|>"})
	}
	const want = "[file:user]hi<|im_end|>"

	loaded, err := prism.LoadChat(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng := openModel(t, dir)
	withConfig, ok := eng.Tokenizer().(interface{ Config() *tokenizer.Config })
	if !ok {
		t.Fatalf("prism.Open's tokenizer %T does not expose its config", eng.Tokenizer())
	}
	read, err := templates.ReadTokenizerConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{
		"prism.LoadChat":                render(loaded),
		"prism.Open's tokenizer":        render(withSource(withConfig.Config().ChatTemplate)),
		"templates.ReadTokenizerConfig": render(templates.NewChat(dir, *read)),
		"engine/tokenizer":              render(withSource(tok.Config().ChatTemplate)),
	} {
		if got != want {
			t.Errorf("%s renders %q, want the file's template: %q", name, got, want)
		}
	}
}
