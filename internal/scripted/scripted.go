package scripted

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// Model is one scripted model: the folder Name holds a model whose greedy
// answer is Answer (or Tokens), then the end of its turn.
type Model struct {
	// Name is the model folder's name, the model id a catalog lists.
	Name string
	// Answer is the text the model says, as the tokenizer encodes it.
	Answer string
	// Tokens, when set, is the script itself instead of Answer's
	// encoding, for one that is not the encoding of a text (one token
	// repeated, say).
	Tokens []int32
	// Context is the model's context window; zero gives 256 positions
	// past the script.
	Context int
	// Configure, when set, changes the generator's configuration last,
	// for what else a test needs of the model (an end token its configs
	// do not name, say).
	Configure func(*onnxgen.Config)
}

// Writer writes scripted models over one real tokenizer folder.
type Writer struct {
	dir string
	tok *tokenizer.Tokenizer
	eos int32
}

// New returns a Writer over the tokenizer folder dir whose models end
// their answer with the token named eos (the chat template's end of turn,
// "<|im_end|>" for Qwen3).
func New(dir, eos string) (*Writer, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	id, ok := tok.TokenToID(eos)
	if !ok {
		return nil, fmt.Errorf("the tokenizer in %s has no token %q", dir, eos)
	}
	return &Writer{dir: dir, tok: tok, eos: id}, nil
}

// Tokenizer is the tokenizer the answers are encoded with.
func (w *Writer) Tokenizer() *tokenizer.Tokenizer { return w.tok }

// Encode encodes text as the models' tokenizer does.
func (w *Writer) Encode(text string) []int32 { return w.tok.Encode(text) }

// EOS is the token each answer ends with.
func (w *Writer) EOS() int32 { return w.eos }

// Write writes m into root/m.Name.
func (w *Writer) Write(ctx context.Context, root string, m Model) error {
	script := m.Tokens
	if script == nil {
		script = w.tok.Encode(m.Answer)
	}
	if len(script) == 0 {
		return fmt.Errorf("scripted model %s: no script (Answer and Tokens are empty)", m.Name)
	}
	cfg := onnxgen.Tiny()
	cfg.TokenizerDir = w.dir
	cfg.Vocab = 0 // the tokenizer's
	cfg.Script = script
	cfg.ScriptEOS = int(w.eos)
	cfg.Context = m.Context
	if cfg.Context == 0 {
		cfg.Context = 256 + len(script)
	}
	if m.Configure != nil {
		m.Configure(&cfg)
	}
	if err := onnxgen.Write(ctx, filepath.Join(root, m.Name), cfg); err != nil {
		return fmt.Errorf("scripted model %s: %w", m.Name, err)
	}
	return nil
}

// Folder is a folder of scripted models over the real Qwen3 tokenizer and
// chat template, written once per test binary on first use. Declare it as
// a package-level variable of the test package and remove it from
// TestMain:
//
//	var models = scripted.Folder{Models: []scripted.Model{
//		{Name: "think", Answer: "<think>\nThe user greets me.\n</think>\n\nHello."},
//	}}
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		models.Remove()
//		os.Exit(code)
//	}
type Folder struct {
	// Models are written first, each into a folder of its name.
	Models []Model
	// Then, when set, runs once Models are written, with the Writer and
	// the folder, for the models a package builds on those.
	Then func(ctx context.Context, w *Writer, root string) error

	once sync.Once
	root string
	w    *Writer
	err  error
}

// Path writes the folder the first time it is called and returns it. The
// models are for running on the ONNX Runtime, so without its library, as
// without the tokenizer, t is skipped (failed in CI) as internal/fixtures
// has it, before anything is written; a folder that cannot be written
// fails t, at this call and at every later one.
func (f *Folder) Path(t testing.TB) string {
	t.Helper()
	// Outside the Once: a skip there would end the writing goroutine with
	// the Once done and nothing written.
	fixtures.ORTLib(t)
	dir := fixtures.TokenizerDir(t, "qwen3")
	f.once.Do(func() { f.root, f.w, f.err = f.write(context.Background(), dir) })
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.root
}

// Writer is the Writer the folder was written with (writing it first),
// for a test that counts or encodes text as the models' tokenizer does.
func (f *Folder) Writer(t testing.TB) *Writer {
	t.Helper()
	f.Path(t)
	return f.w
}

// Remove deletes the folder, if it was written. Call it from TestMain
// once m.Run has returned.
func (f *Folder) Remove() {
	if f.root != "" {
		_ = os.RemoveAll(f.root)
	}
}

func (f *Folder) write(ctx context.Context, tokDir string) (string, *Writer, error) {
	w, err := New(tokDir, "<|im_end|>")
	if err != nil {
		return "", nil, err
	}
	root, err := os.MkdirTemp("", "prism-models-")
	if err != nil {
		return "", nil, err
	}
	err = f.writeInto(ctx, w, root)
	if err != nil {
		return "", nil, errors.Join(err, os.RemoveAll(root))
	}
	return root, w, nil
}

func (f *Folder) writeInto(ctx context.Context, w *Writer, root string) error {
	for _, m := range f.Models {
		if err := w.Write(ctx, root, m); err != nil {
			return err
		}
	}
	if f.Then != nil {
		return f.Then(ctx, w, root)
	}
	return nil
}
