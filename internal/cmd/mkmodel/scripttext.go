package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// textEncoder turns script text into token ids of a HF tokenizer.json. It
// is deliberately simple: added tokens (e.g. <think>, <tool_call>) are
// matched first, longest first; the rest is split by greedy longest match
// over the vocabulary — byte-level for GPT-2-style tokenizers, "▁" for
// spaces plus <0xXX> byte fallback for sentencepiece-style ones. The ids
// are a valid spelling of the text (they decode back to it), not
// necessarily the spelling the tokenizer's own merges would choose, which
// is all a scripted model needs: it emits them, the engine decodes them.
type textEncoder struct {
	vocab     map[string]int32
	added     []addedToken // longest first
	byteLevel bool
	maxLen    int // longest vocabulary entry, in runes
}

type addedToken struct {
	content string
	id      int32
}

func loadTextEncoder(dir string) (*textEncoder, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	var tj struct {
		Model struct {
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
		AddedTokens []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Decoder json.RawMessage `json:"decoder"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if len(tj.Model.Vocab) == 0 {
		return nil, fmt.Errorf("tokenizer.json: only BPE vocabularies (a token → id map) are supported for -script; use -script-ids")
	}
	e := &textEncoder{vocab: tj.Model.Vocab}
	for tok := range e.vocab {
		e.maxLen = max(e.maxLen, utf8.RuneCountInString(tok))
	}
	for _, a := range tj.AddedTokens {
		if a.Content != "" {
			e.added = append(e.added, addedToken{a.Content, a.ID})
		}
	}
	sort.Slice(e.added, func(i, j int) bool { return len(e.added[i].content) > len(e.added[j].content) })
	e.byteLevel = strings.Contains(string(tj.Decoder), `"ByteLevel"`)
	return e, nil
}

// encode spells text as token ids.
func (e *textEncoder) encode(text string) ([]int32, error) {
	var ids []int32
	var plain strings.Builder
	flush := func() error {
		if plain.Len() == 0 {
			return nil
		}
		got, err := e.encodePlain(plain.String())
		ids = append(ids, got...)
		plain.Reset()
		return err
	}
	for i := 0; i < len(text); {
		matched := false
		for _, a := range e.added {
			if strings.HasPrefix(text[i:], a.content) {
				if err := flush(); err != nil {
					return nil, err
				}
				ids = append(ids, a.id)
				i += len(a.content)
				matched = true
				break
			}
		}
		if !matched {
			_, n := utf8.DecodeRuneInString(text[i:])
			plain.WriteString(text[i : i+n])
			i += n
		}
	}
	return ids, flush()
}

func (e *textEncoder) encodePlain(s string) ([]int32, error) {
	var units []rune
	if e.byteLevel {
		table := byteLevelTable()
		for _, b := range []byte(s) {
			units = append(units, table[b])
		}
	} else {
		units = []rune(strings.ReplaceAll(s, " ", "▁"))
	}
	var ids []int32
	for i := 0; i < len(units); {
		n := min(e.maxLen, len(units)-i)
		for ; n > 0; n-- {
			if id, ok := e.vocab[string(units[i:i+n])]; ok {
				ids = append(ids, id)
				break
			}
		}
		if n > 0 {
			i += n
			continue
		}
		if e.byteLevel {
			return nil, fmt.Errorf("no token for %q", string(units[i]))
		}
		// Sentencepiece byte fallback.
		var buf [utf8.UTFMax]byte
		for _, b := range buf[:utf8.EncodeRune(buf[:], units[i])] {
			id, ok := e.vocab[fmt.Sprintf("<0x%02X>", b)]
			if !ok {
				return nil, fmt.Errorf("no token for %q and no byte fallback", string(units[i]))
			}
			ids = append(ids, id)
		}
		i++
	}
	return ids, nil
}

// byteLevelTable maps each byte to the printable rune GPT-2-style
// byte-level vocabularies spell it with.
func byteLevelTable() [256]rune {
	var t [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			t[b] = rune(b)
		} else {
			t[b] = next
			next++
		}
	}
	return t
}
