package engine

// Tokenizer is what an Engine needs from a tokenizer. engine/tokenizer
// provides the real one (through a small adapter, since its streaming decoder
// is a concrete type); engine/enginetest provides a byte-level toy. Encode
// may be called from several goroutines at once (prompts are encoded before
// a stream waits for the engine); a StreamDecoder is used by one stream at a
// time.
type Tokenizer interface {
	// Encode turns text into token ids, exactly as the model's tokenizer
	// does (including any BOS the tokenizer adds by its configuration).
	Encode(text string) []int32
	// Decode turns ids into text; skipSpecial drops special tokens.
	Decode(ids []int32, skipSpecial bool) string
	// NewStreamDecoder returns a decoder for one stream of ids.
	NewStreamDecoder(skipSpecial bool) StreamDecoder
	// EOS returns the tokenizer's end-of-sequence ids (may be empty).
	EOS() []int32
}

// StreamDecoder turns token ids into text incrementally and yields only
// complete UTF-8: bytes of a character split across tokens are held until
// the character is complete.
type StreamDecoder interface {
	// Append appends the text that id completes to dst and returns it.
	Append(dst []byte, id int32) []byte
	// Flush appends whatever is still held (incomplete characters are
	// replaced by U+FFFD) and resets the decoder.
	Flush(dst []byte) []byte
	// Reset drops any held state.
	Reset()
}
