package enginetest

import (
	"unicode/utf8"

	"github.com/prism-local/prism/engine"
)

// Token ids of the byte tokenizer: ids 0-255 are the bytes themselves,
// followed by two special tokens.
const (
	EOS       int32 = 256 // "<|eos|>"
	BOS       int32 = 257 // "<|bos|>"
	ByteVocab       = 258 // vocabulary size
)

// ByteTokenizer is a toy tokenizer: every byte of the text is one token.
// Multi-byte characters therefore span several tokens, which exercises the
// streaming decoder's UTF-8 handling. It implements engine.Tokenizer.
type ByteTokenizer struct{}

// Encode returns one id per byte of text.
func (ByteTokenizer) Encode(text string) []int32 {
	ids := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int32(text[i])
	}
	return ids
}

// Decode turns ids back into text; special tokens are written as
// <|eos|> and <|bos|> unless skipSpecial.
func (ByteTokenizer) Decode(ids []int32, skipSpecial bool) string {
	var b []byte
	for _, id := range ids {
		b = appendID(b, id, skipSpecial)
	}
	return string(b)
}

// EOS returns the end-of-sequence id.
func (ByteTokenizer) EOS() []int32 { return []int32{EOS} }

// NewStreamDecoder returns a decoder that yields complete UTF-8 only.
func (ByteTokenizer) NewStreamDecoder(skipSpecial bool) engine.StreamDecoder {
	return &byteDecoder{skip: skipSpecial}
}

func appendID(b []byte, id int32, skipSpecial bool) []byte {
	switch {
	case id >= 0 && id < 256:
		return append(b, byte(id))
	case skipSpecial:
		return b
	case id == EOS:
		return append(b, "<|eos|>"...)
	case id == BOS:
		return append(b, "<|bos|>"...)
	}
	return b
}

type byteDecoder struct {
	skip    bool
	pending []byte
}

func (d *byteDecoder) Append(dst []byte, id int32) []byte {
	if id < 0 || id >= 256 {
		return appendID(dst, id, d.skip)
	}
	d.pending = append(d.pending, byte(id))
	for len(d.pending) > 0 && utf8.FullRune(d.pending) {
		r, size := utf8.DecodeRune(d.pending)
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, d.pending[:size]...)
		}
		d.pending = d.pending[:copy(d.pending, d.pending[size:])]
	}
	return dst
}

func (d *byteDecoder) Flush(dst []byte) []byte {
	if len(d.pending) > 0 {
		dst = utf8.AppendRune(dst, utf8.RuneError)
	}
	d.pending = d.pending[:0]
	return dst
}

func (d *byteDecoder) Reset() { d.pending = d.pending[:0] }
