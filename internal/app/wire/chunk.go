package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// ChunkEncoder writes the chunks of one streamed chat completion. The
// content and reasoning delta chunks — one per token — are appended to a
// caller's buffer with the stream's id, model and time written once, so a
// token costs no allocation; other chunks go through encoding/json with the
// same header.
type ChunkEncoder struct {
	ID      string
	Model   string
	Created int64
	head    []byte // {"id":...,"choices":[{"index":0,"delta":{
}

// NewChunkEncoder returns the encoder of a stream.
func NewChunkEncoder(id, model string, created int64) *ChunkEncoder {
	h := []byte(`{"id":`)
	h = appendString(h, id)
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	h = appendString(h, model)
	h = append(h, `,"choices":[{"index":0,"delta":{`...)
	return &ChunkEncoder{ID: id, Model: model, Created: created, head: h}
}

const deltaTail = `},"logprobs":null,"finish_reason":null}]}`

// AppendContent appends the chunk whose delta is {"content": piece}.
func (e *ChunkEncoder) AppendContent(dst []byte, piece string) []byte {
	dst = append(dst, e.head...)
	dst = append(dst, `"content":`...)
	dst = appendString(dst, piece)
	return append(dst, deltaTail...)
}

// AppendReasoning appends the chunk whose delta carries piece as both
// reasoning_content and reasoning.
func (e *ChunkEncoder) AppendReasoning(dst []byte, piece string) []byte {
	dst = append(dst, e.head...)
	dst = append(dst, `"reasoning_content":`...)
	start := len(dst)
	dst = appendString(dst, piece)
	end := len(dst)
	dst = append(dst, `,"reasoning":`...)
	dst = append(dst, dst[start:end]...)
	return append(dst, deltaTail...)
}

// Chunk returns a chunk of this stream with one choice.
func (e *ChunkEncoder) Chunk(delta Delta, finish string) ChatChunk {
	c := ChunkChoice{Delta: delta}
	if finish != "" {
		c.FinishReason = &finish
	}
	return ChatChunk{ID: e.ID, Object: "chat.completion.chunk", Created: e.Created, Model: e.Model, Choices: []ChunkChoice{c}}
}

// UsageChunk returns the last chunk of a stream with include_usage: no
// choices, the usage.
func (e *ChunkEncoder) UsageChunk(u *Usage) ChatChunk {
	return ChatChunk{ID: e.ID, Object: "chat.completion.chunk", Created: e.Created, Model: e.Model, Choices: []ChunkChoice{}, Usage: u}
}

// AppendJSON appends v encoded by encoding/json, for the chunks off the
// hot path.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, decoding to the same text as
// encoding/json's encoding of s: each invalid UTF-8 byte becomes U+FFFD,
// control characters and U+2028/U+2029 are escaped. HTML characters are
// left as they are (a stream is not HTML).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
