package prism

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/modelfolder"
)

// loadTokenizer loads the folder's tokenizer. A folder without
// tokenizer.json still loads, for requests as token ids: its engine
// refuses text with an *engine.NoTokenizerError naming the file.
func loadTokenizer(model, dir string, load func(dir string) (*tokenizer.Tokenizer, error)) (engine.Tokenizer, error) {
	tok, err := load(dir)
	var te *tokenizer.Error
	switch {
	case err == nil:
		return tokenizerAdapter{tok}, nil
	case errors.Is(err, fs.ErrNotExist) && errors.As(err, &te) && filepath.Base(te.Path) == modelfolder.TokenizerFile:
		return engine.NoTokenizer(&engine.NoTokenizerError{Model: model, File: te.Path, Err: fs.ErrNotExist}), nil
	}
	return nil, err
}
