package tokenizer

// Piece returns the bytes id adds to the decoded text in the middle of a
// stream: the raw bytes of a byte-level token, the text of a sentencepiece
// piece with "▁" turned into a space, the single byte of a <0xNN> fallback
// token, the content of an added token. It is what constrained decoding
// matches a grammar against. The slice is shared and must not be modified.
//
// ok is false for an id without a token and for tokenizers whose decoder
// chain has no incremental form (then text exists only for whole
// sequences). The decoder steps that act on a whole text are not applied
// here: see Decoding for them.
func (t *Tokenizer) Piece(id int32) (piece []byte, ok bool) {
	p := &t.stream
	if p.kind == streamBuffered || id < 0 || int(id) >= len(p.kinds) || !t.has[id] {
		return nil, false
	}
	return p.arena[p.offs[id]:p.offs[id+1]], true
}

// IsAdded reports whether id is an added token (special or not): one matched
// in the text before the model's own splitting.
func (t *Tokenizer) IsAdded(id int32) bool {
	if id < 0 || int(id) >= len(t.tokens) || !t.has[id] {
		return false
	}
	_, ok := t.added[t.tokens[id]]
	return ok
}

// Decoding describes what the stream decoder does to the text beyond
// concatenating pieces.
type Decoding struct {
	// StripLeft leading copies of StripByte are dropped from the start of
	// the whole text (sentencepiece decoders that strip the first space).
	StripLeft int
	StripByte byte
	// CleanUp is clean_up_tokenization_spaces: a space before . , ! ? and
	// some contractions is removed.
	CleanUp bool
	// ByteFallbackBOM: a U+FEFF spelled by byte-fallback tokens at the start
	// of a run of them is dropped.
	ByteFallbackBOM bool
}

// Decoding returns the whole-text steps of this tokenizer's decoder.
func (t *Tokenizer) Decoding() Decoding {
	p := &t.stream
	return Decoding{StripLeft: p.stripLeft, StripByte: p.stripByte, CleanUp: t.cleanup, ByteFallbackBOM: p.stripBOM}
}
