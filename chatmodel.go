package prism

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/templates"
)

// Models holds the text side of the model folders a process serves, each
// read once: the tokenizer, the chat templates and the grammar compiler
// built over that tokenizer's vocabulary. Open given WithModels takes the
// tokenizer from here, so the engine and the grammar share one (the
// engine's tokenizer is the grammar's vocabulary); nothing is loaded twice.
// The zero value is not usable: call NewModels. Safe for concurrent use.
type Models struct {
	log *slog.Logger

	mu      sync.Mutex
	folders map[string]*folderText
}

// folderText is one folder's text side; each part is read on first use.
type folderText struct {
	tok      *tokenizer.Tokenizer
	chat     *templates.Chat
	compiler *grammar.Compiler
	// objectArgs: the template renders tool-call arguments given as an
	// object (decided once by objectArguments; nil before).
	objectArgs *bool
}

// NewModels returns an empty cache whose templates log to logger (nil
// for slog.Default).
func NewModels(logger *slog.Logger) *Models {
	if logger == nil {
		logger = slog.Default()
	}
	return &Models{log: logger, folders: map[string]*folderText{}}
}

func (m *Models) folder(dir string) *folderText {
	f, ok := m.folders[dir]
	if !ok {
		f = &folderText{}
		m.folders[dir] = f
	}
	return f
}

// Tokenizer returns the tokenizer of the model folder dir.
func (m *Models) Tokenizer(dir string) (*tokenizer.Tokenizer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.folder(dir)
	if f.tok == nil {
		t, err := tokenizer.Load(dir)
		if err != nil {
			return nil, fmt.Errorf("tokenizer of %s: %w", dir, err)
		}
		f.tok = t
	}
	return f.tok, nil
}

// Templates returns the chat templates of the model folder dir
// (LoadChat). A template that is refused is logged once; requests
// without tools then use the built-in format.
func (m *Models) Templates(dir string) (*templates.Chat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.folder(dir)
	if f.chat == nil {
		c, err := LoadChat(dir, m.log)
		if err != nil {
			return nil, err
		}
		if err := c.Err(); err != nil {
			m.log.Warn("chat template refused; requests without tools use the built-in format", "dir", dir, "err", err)
		}
		f.chat = c
	}
	return f.chat, nil
}

// objectArguments reports whether the chat template of the folder dir
// writes a tool call's arguments given as an object, as its reference
// renderer does (tojson on a mapping): a round trip whose arguments came
// back as a JSON string then reaches the template as the object they
// encode, so the prompt holds the call as the model wrote it. A template
// that concatenates them as text (DeepSeek-V3's) keeps the string: given
// an object it fails, or writes no call at all. It is found once per
// folder by rendering a probe conversation.
func (m *Models) objectArguments(ctx context.Context, dir string, chat *templates.Chat) bool {
	m.mu.Lock()
	f := m.folder(dir)
	known := f.objectArgs
	m.mu.Unlock()
	if known != nil {
		return *known
	}
	p, err := chat.Render(ctx, templates.Input{AddGenerationPrompt: true,
		Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"probe_fn","parameters":{"type":"object","properties":{"probe_arg":{"type":"string"}}}}}`)},
		Messages: []templates.Message{{Role: "user", Content: templates.Text("?")},
			{Role: "assistant", Content: templates.Text(""), ToolCalls: []templates.ToolCall{{ID: "call_0", Type: "function",
				Function: templates.FunctionCall{Name: "probe_fn", Arguments: json.RawMessage(`{"probe_arg": "probe value"}`)}}}},
			{Role: "tool", ToolCallID: "call_0", Content: templates.Text("ok")}}})
	ok := err == nil && !p.Fallback && p.NullAsEmpty == nil && strings.Contains(p.Text, `{"probe_arg": "probe value"}`)
	if ctx.Err() != nil {
		return ok // not decided: a cancelled render says nothing of the template
	}
	m.mu.Lock()
	f.objectArgs = &ok
	m.mu.Unlock()
	return ok
}

// Compiler returns the grammar compiler of the model folder dir, over the
// vocabulary of its tokenizer.
func (m *Models) Compiler(dir string) (*grammar.Compiler, error) {
	tok, err := m.Tokenizer(dir)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.folder(dir)
	if f.compiler == nil {
		v, err := grammar.NewVocabulary(tok)
		if err != nil {
			return nil, fmt.Errorf("structured outputs for %s: %w", dir, err)
		}
		f.compiler = grammar.NewCompiler(v, 0)
	}
	return f.compiler, nil
}

// Loader is an engine.Loader for a Manager whose model names are
// ModelKey's: it opens the folder (with the key's variant) through Open,
// with opts and the tokenizer of m.
func (m *Models) Loader(opts ...Option) engine.Loader {
	return func(ctx context.Context, key string) (*engine.Engine, error) {
		dir, variant := SplitModelKey(key)
		o := append([]Option{WithModels(m)}, opts...)
		if variant != "" {
			o = append(o, WithVariant(variant))
		}
		return Open(ctx, dir, o...)
	}
}

// WithModels makes Open take the folder's tokenizer from m (loading it
// there on first use) instead of loading its own.
func WithModels(m *Models) Option { return func(c *config) { c.models = m } }

// ModelKey names a model folder and a dtype variant ("" for the folder's
// choice) as one string, the model name a Manager is given by the chat
// layer: the folder, then the variant after a newline (a character no
// folder name the catalog offers contains).
func ModelKey(dir, variant string) string {
	if variant == "" {
		return dir
	}
	return dir + "\n" + variant
}

// SplitModelKey undoes ModelKey.
func SplitModelKey(key string) (dir, variant string) {
	dir, variant, _ = strings.Cut(key, "\n")
	return dir, variant
}
