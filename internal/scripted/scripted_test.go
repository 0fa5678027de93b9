package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/internal/scripted"
)

// TestFolder: the models are written once, with the window and end token
// asked for, beside what Then adds; Remove deletes the folder.
func TestFolder(t *testing.T) {
	thens := 0
	f := scripted.Folder{
		Models: []scripted.Model{{Name: "hello", Answer: "Hello there."}, {Name: "wide", Answer: "Hi.", Context: 1024}},
		Then: func(ctx context.Context, w *scripted.Writer, root string) error {
			thens++
			again := w.Encode(" again")[:1]
			return w.Write(ctx, root, scripted.Model{Name: "loop", Tokens: []int32{again[0], again[0], again[0]},
				Configure: func(c *onnxgen.Config) { c.EOS = []int{int(w.EOS()), 0} }})
		},
	}
	root := f.Path(t)
	if again := f.Path(t); again != root || thens != 1 {
		t.Fatalf("written again: %s then %s, Then ran %d times", root, again, thens)
	}
	w := f.Writer(t)
	if id, _ := w.Tokenizer().TokenToID("<|im_end|>"); w.EOS() != id {
		t.Errorf("EOS %d, want <|im_end|> (%d)", w.EOS(), id)
	}
	for name, want := range map[string]struct {
		window int
		eos    any
	}{
		"hello": {256 + len(w.Encode("Hello there.")), float64(w.EOS())},
		"wide":  {1024, float64(w.EOS())},
		"loop":  {256 + 3, []any{float64(w.EOS()), 0.0}},
	} {
		var cfg struct {
			Window int `json:"max_position_embeddings"`
			EOS    any `json:"eos_token_id"`
		}
		b, err := os.ReadFile(filepath.Join(root, name, "config.json"))
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cfg.Window != want.window || !equalJSON(cfg.EOS, want.eos) {
			t.Errorf("%s: window %d, eos %v; want %d, %v", name, cfg.Window, cfg.EOS, want.window, want.eos)
		}
		for _, file := range []string{onnxgen.OptimumModelFile, "tokenizer.json", "tokenizer_config.json"} {
			if _, err := os.Stat(filepath.Join(root, name, file)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	f.Remove()
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder is still there: %v", err)
	}
}

// TestWriterRefuses: a model without a script, and a tokenizer folder
// that is not there, are errors.
func TestWriterRefuses(t *testing.T) {
	var f scripted.Folder
	if err := f.Writer(t).Write(t.Context(), t.TempDir(), scripted.Model{Name: "empty"}); err == nil {
		t.Error("wrote a model without a script")
	}
	f.Remove()
	if w, err := scripted.New(filepath.Join(t.TempDir(), "none"), "<|im_end|>"); err == nil || w != nil {
		t.Errorf("New on a missing folder: %v", err)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
