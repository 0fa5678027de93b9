package tokenizer

import (
	"encoding/json"
	"strings"
)

// decoderStep is one decoder of tokenizer.json's decoder chain, working on
// the list of token strings as the reference does.
type decoderStep interface {
	chain(tokens []string) []string
}

type decSequence []decoderStep

func (q decSequence) chain(tokens []string) []string {
	for _, d := range q {
		tokens = d.chain(tokens)
	}
	return tokens
}

// decByteLevel maps byte-level characters back to bytes and decodes them as
// UTF-8; added tokens pass through as they are and end a run of bytes.
type decByteLevel struct {
	charBytes map[rune]byte
	added     map[string]bool
}

func (d *decByteLevel) chain(tokens []string) []string {
	var out []string
	var buf []byte
	flush := func() {
		if len(buf) > 0 {
			out = append(out, string(appendWHATWG(nil, buf, false)))
			buf = buf[:0]
		}
	}
	for _, t := range tokens {
		if d.added[t] {
			flush()
			out = append(out, t)
			continue
		}
		for _, r := range t {
			buf = append(buf, d.charBytes[r]) // unknown characters become 0, as in the reference
		}
	}
	flush()
	return out
}

type decReplace struct{ old, new string }

func (d decReplace) chain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(t, d.old, d.new)
	}
	return out
}

// byteToken parses a "<0xXX>" token the way the reference does.
func byteToken(t string) (byte, bool) {
	if !strings.HasPrefix(t, "<0x") || !strings.HasSuffix(t, ">") || utf16Len(t) != 6 {
		return 0, false
	}
	mid := t[3 : len(t)-1]
	v, n := 0, 0
	for n < len(mid) && n < 2 {
		c := mid[n]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			d = -1
		}
		if d < 0 {
			break
		}
		v = v*16 + d
		n++
	}
	if n == 0 {
		return 0, false
	}
	return byte(v), true
}

// decByteFallback turns runs of "<0xXX>" tokens into text (TextDecoder with
// its default BOM handling: a leading U+FEFF of each run is dropped).
type decByteFallback struct{}

func (decByteFallback) chain(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var buf []byte
	for _, t := range tokens {
		if b, ok := byteToken(t); ok {
			buf = append(buf, b)
			continue
		}
		if len(buf) > 0 {
			out = append(out, string(appendWHATWG(nil, buf, true)))
			buf = buf[:0]
		}
		out = append(out, t)
	}
	if len(buf) > 0 {
		out = append(out, string(appendWHATWG(nil, buf, true)))
	}
	return out
}

type decFuse struct{}

func (decFuse) chain(tokens []string) []string { return []string{strings.Join(tokens, "")} }

// decStrip removes up to start leading and stop trailing copies of content
// from each token.
type decStrip struct {
	content     string
	start, stop int
}

func (d decStrip) chain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		for k := 0; k < d.start && d.content != "" && strings.HasPrefix(t, d.content); k++ {
			t = t[len(d.content):]
		}
		for k := 0; k < d.stop && d.content != "" && strings.HasSuffix(t, d.content); k++ {
			t = t[:len(t)-len(d.content)]
		}
		out[i] = t
	}
	return out
}

// decMetaspace replaces the metaspace with spaces and drops the first
// token's leading space.
type decMetaspace struct{ replacement string }

func (d decMetaspace) chain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		t = strings.ReplaceAll(t, d.replacement, " ")
		if i == 0 {
			t = strings.TrimPrefix(t, " ")
		}
		out[i] = t
	}
	return out
}

func buildDecoder(raw json.RawMessage, charBytes map[rune]byte, added map[string]bool) (decoderStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	var head componentJSON
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, badComponent("decoder", "%w", err)
	}
	comp := "decoder." + head.Type
	switch head.Type {
	case "Sequence":
		var c struct {
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		seq := decSequence{}
		for _, r := range c.Decoders {
			d, err := buildDecoder(r, charBytes, added)
			if err != nil {
				return nil, err
			}
			if d == nil {
				return nil, badComponent(comp, "null decoder in sequence")
			}
			seq = append(seq, d)
		}
		return seq, nil
	case "ByteLevel":
		return &decByteLevel{charBytes: charBytes, added: added}, nil
	case "Replace":
		var c struct {
			Pattern json.RawMessage `json:"pattern"`
			Content string          `json:"content"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		old, err := stringPattern(c.Pattern, comp)
		if err != nil {
			return nil, err
		}
		if old == "" {
			return nil, unsupported(comp, "empty pattern")
		}
		return decReplace{old, c.Content}, nil
	case "ByteFallback":
		return decByteFallback{}, nil
	case "Fuse":
		return decFuse{}, nil
	case "Strip":
		var c struct {
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		if len([]rune(c.Content)) != 1 {
			return nil, unsupported(comp, "content must be one character")
		}
		return decStrip{c.Content, c.Start, c.Stop}, nil
	case "Metaspace":
		var c struct {
			Replacement *string `json:"replacement"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		d := decMetaspace{replacement: metaSpace}
		if c.Replacement != nil {
			d.replacement = *c.Replacement
		}
		return d, nil
	}
	return nil, unsupported(comp, "")
}

// cleanUpTokenization is the reference's clean_up_tokenization: ten
// replace-all passes, in this order.
var cleanupPairs = [...][2]string{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
	{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

func cleanUpTokenization(s string) string {
	for _, p := range cleanupPairs {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return s
}

// Decode turns ids into text as the reference does: ids are mapped to token
// strings (an unknown id to the unknown token, or nothing when there is
// none), special tokens are dropped when skipSpecial is set, the decoder
// chain runs, and tokenization spaces are cleaned up when
// tokenizer_config.json asks for it (clean_up_tokenization_spaces, true by
// default as in the reference). Decode of no ids is "".
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	if len(ids) == 0 {
		return ""
	}
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		tok, ok := t.idToken(id)
		if !ok {
			continue
		}
		if skipSpecial && t.specialText[tok] {
			continue
		}
		tokens = append(tokens, tok)
	}
	var s string
	if t.decoder != nil {
		s = strings.Join(t.decoder.chain(tokens), "")
	} else {
		s = strings.Join(tokens, " ")
	}
	if t.cleanup {
		s = cleanUpTokenization(s)
	}
	return s
}

// idToken is the token string an id decodes from: its own, or the model's
// unknown token for ids without one.
func (t *Tokenizer) idToken(id int32) (string, bool) {
	if id >= 0 && int(id) < len(t.tokens) && t.has[id] {
		return t.tokens[id], true
	}
	if t.unkToken != "" {
		return t.unkToken, true
	}
	return "", false
}
