package onnxgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prism-local/prism/internal/modelfolder"
)

// tokenizerFiles are copied from a tokenizer folder when present;
// tokenizer.json and tokenizer_config.json are required.
var tokenizerFiles = []string{
	modelfolder.TokenizerFile, modelfolder.TokenizerConfigFile, "special_tokens_map.json",
	modelfolder.ChatTemplateFile, "chat_template.json", "vocab.json", "merges.txt",
}

// ErrTokenizer is wrapped by errors about a tokenizer folder.
var ErrTokenizer = errors.New("unusable tokenizer folder")

// TokenizerInfo is what the generator needs to know about a HF tokenizer.
type TokenizerInfo struct {
	// Vocab is the largest token id in the model vocabulary and the added
	// tokens, plus one.
	Vocab int
	// EOS is the id of tokenizer_config.json's eos_token, or -1.
	EOS int
	// BOS is the id of tokenizer_config.json's bos_token, or -1.
	BOS int
	// PAD is the id of tokenizer_config.json's pad_token, or -1.
	PAD int
}

// ReadTokenizer reads the tokenizer folder dir.
func ReadTokenizer(dir string) (TokenizerInfo, error) {
	tj, err := os.ReadFile(filepath.Join(dir, modelfolder.TokenizerFile))
	if err != nil {
		return TokenizerInfo{}, fmt.Errorf("%w: %w", ErrTokenizer, err)
	}
	tc, err := os.ReadFile(filepath.Join(dir, modelfolder.TokenizerConfigFile))
	if err != nil {
		return TokenizerInfo{}, fmt.Errorf("%w: %w", ErrTokenizer, err)
	}
	return parseTokenizer(tj, tc)
}

// parseTokenizer reads the vocabulary size and special ids from the
// contents of tokenizer.json and tokenizer_config.json.
func parseTokenizer(tokenizerJSON, configJSON []byte) (TokenizerInfo, error) {
	type added struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	}
	// BPE and WordPiece vocabularies map token to id (decoded in one pass);
	// Unigram lists [piece, score] pairs whose id is the index.
	var byMap struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		AddedTokens []added `json:"added_tokens"`
	}
	ids := map[string]int{}
	maxID := -1
	var addedTokens []added
	if err := json.Unmarshal(tokenizerJSON, &byMap); err == nil {
		ids = byMap.Model.Vocab
		if ids == nil {
			ids = map[string]int{}
		}
		for _, id := range ids {
			maxID = max(maxID, id)
		}
		addedTokens = byMap.AddedTokens
	} else {
		var byList struct {
			Model struct {
				Vocab [][]json.RawMessage `json:"vocab"`
			} `json:"model"`
			AddedTokens []added `json:"added_tokens"`
		}
		if err := json.Unmarshal(tokenizerJSON, &byList); err != nil {
			return TokenizerInfo{}, fmt.Errorf("%w: tokenizer.json: %w", ErrTokenizer, err)
		}
		for i, pair := range byList.Model.Vocab {
			var piece string
			if len(pair) > 0 && json.Unmarshal(pair[0], &piece) == nil {
				ids[piece] = i
			}
		}
		maxID = len(byList.Model.Vocab) - 1
		addedTokens = byList.AddedTokens
	}
	for _, a := range addedTokens {
		ids[a.Content] = a.ID
		maxID = max(maxID, a.ID)
	}
	if maxID < 0 {
		return TokenizerInfo{}, fmt.Errorf("%w: tokenizer.json has no vocabulary", ErrTokenizer)
	}
	if maxID >= 1<<31-1 {
		return TokenizerInfo{}, fmt.Errorf("%w: token id %d too large", ErrTokenizer, maxID)
	}
	var tc map[string]json.RawMessage
	if err := json.Unmarshal(configJSON, &tc); err != nil {
		return TokenizerInfo{}, fmt.Errorf("%w: tokenizer_config.json: %w", ErrTokenizer, err)
	}
	special := func(key string) int {
		raw, ok := tc[key]
		if !ok {
			return -1
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			var obj struct {
				Content string `json:"content"`
			}
			if json.Unmarshal(raw, &obj) != nil {
				return -1
			}
			s = obj.Content
		}
		if id, ok := ids[s]; ok && s != "" {
			return id
		}
		return -1
	}
	return TokenizerInfo{Vocab: maxID + 1, EOS: special("eos_token"), BOS: special("bos_token"), PAD: special("pad_token")}, nil
}
