package prism_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/templates"
)

func TestLoadChat(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"bos_token": "<s>", "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	chat, err := prism.LoadChat(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	p, err := chat.Render(t.Context(), templates.Input{Messages: []templates.Message{{Role: "user", Content: templates.Text("hi")}}})
	if err != nil || p.Fallback || p.Text != "<s>[user] hi" {
		t.Fatalf("got %+v, %v", p, err)
	}

	_, err = prism.LoadChat(filepath.Join(dir, "missing"), nil)
	var le *engine.ModelLoadError
	if !errors.As(err, &le) || le.Code() != engine.CodeModelLoadFailed {
		t.Fatalf("want a ModelLoadError for a missing folder, got %v", err)
	}
}
