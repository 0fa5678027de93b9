package tokenizer

import (
	"bytes"
	"encoding/json"
	"github.com/prism-local/prism/internal/utf8seq"
	"strings"
)

// streamPlan is the decoder chain compiled for incremental decoding. Two
// shapes cover real models: byte-level (ByteLevel) and sentencepiece style
// (Replace..., ByteFallback, Fuse, Strip). Any other chain is decoded by
// buffering ids and decoding them at Flush.
type streamPlan struct {
	kind      streamKind
	kinds     []uint8  // per id: pieceNone, pieceBytes, pieceText
	offs      []uint32 // per id: piece bytes are arena[offs[id]:offs[id+1]]
	arena     []byte
	missKind  uint8 // piece of an id without a token (the unknown token's)
	missPiece []byte
	missSkip  bool
	stripBOM  bool // byte groups drop a leading U+FEFF (ByteFallback)
	stripLeft int  // leading copies of stripByte dropped from the whole text
	stripByte byte
}

type streamKind uint8

const (
	streamBuffered streamKind = iota
	streamByteLevel
	streamPieces
)

const (
	pieceNone uint8 = iota
	pieceBytes
	pieceText
)

func (t *Tokenizer) planStream(_ json.RawMessage, added map[string]bool) streamPlan {
	var p streamPlan
	steps := []decoderStep{t.decoder}
	if q, ok := t.decoder.(decSequence); ok {
		steps = q
	}
	// pieceOf appends the piece of tok to dst and reports its kind.
	var pieceOf func(dst []byte, tok string) (uint8, []byte)
	switch {
	case len(steps) == 1 && isByteLevel(steps[0]):
		p.kind = streamByteLevel
		var dec [0x200]byte // byte-level characters are all below U+0200
		for b, r := range byteLevelEncodeTable() {
			dec[r] = byte(b)
		}
		pieceOf = func(dst []byte, tok string) (uint8, []byte) {
			if added[tok] {
				return pieceText, append(dst, tok...)
			}
			for _, r := range tok {
				if r < 0x200 {
					dst = append(dst, dec[r])
				} else {
					dst = append(dst, 0) // as the reference: unknown characters become 0
				}
			}
			return pieceBytes, dst
		}
	default:
		var replaces []decReplace
		k := 0
		for k < len(steps) {
			r, ok := steps[k].(decReplace)
			if !ok {
				break
			}
			replaces = append(replaces, r)
			k++
		}
		fallback := false
		if k < len(steps) {
			if _, ok := steps[k].(decByteFallback); ok {
				fallback = true
				k++
			}
		}
		if k >= len(steps) {
			return p
		}
		if _, ok := steps[k].(decFuse); !ok {
			return p
		}
		k++
		if k < len(steps) {
			s, ok := steps[k].(decStrip)
			if !ok || s.stop != 0 || len(s.content) != 1 {
				return p
			}
			p.stripLeft, p.stripByte = s.start, s.content[0]
			k++
		}
		if k != len(steps) {
			return p
		}
		p.kind = streamPieces
		p.stripBOM = true
		pieceOf = func(dst []byte, tok string) (uint8, []byte) {
			for _, r := range replaces {
				tok = strings.ReplaceAll(tok, r.old, r.new)
			}
			if fallback {
				if b, ok := byteToken(tok); ok {
					return pieceBytes, append(dst, b)
				}
			}
			return pieceText, append(dst, tok...)
		}
	}
	n := len(t.tokens)
	size := 0
	for id := 0; id < n; id++ {
		size += len(t.tokens[id])
	}
	p.arena = make([]byte, 0, size)
	p.kinds = make([]uint8, n)
	p.offs = make([]uint32, n+1)
	for id := 0; id < n; id++ {
		p.offs[id] = uint32(len(p.arena))
		if !t.has[id] {
			continue
		}
		p.kinds[id], p.arena = pieceOf(p.arena, t.tokens[id])
	}
	p.offs[n] = uint32(len(p.arena))
	if t.unkToken != "" {
		p.missKind, p.missPiece = pieceOf(nil, t.unkToken)
		p.missSkip = t.specialText[t.unkToken]
	}
	return p
}

func isByteLevel(d decoderStep) bool {
	_, ok := d.(*decByteLevel)
	return ok
}

// StreamDecoder turns ids into text one at a time. Whatever it has appended
// after k ids, followed by what Flush would append, equals Decode(ids[:k]);
// Append emits only complete UTF-8 and holds back what later ids may still
// change (an incomplete character, a space the clean-up may remove). It is
// not safe for concurrent use; create one per stream.
type StreamDecoder struct {
	t    *Tokenizer
	p    *streamPlan
	skip bool

	pend       [4]byte
	npend      int
	need       int
	lower      byte
	upper      byte
	groupFresh bool
	stripLeft  int
	clean      cleanupStream
	ids        []int32 // buffered ids for chains without an incremental plan
}

// NewDecoder returns a streaming decoder; skipSpecial is as for Decode.
func (t *Tokenizer) NewDecoder(skipSpecial bool) *StreamDecoder {
	d := &StreamDecoder{t: t, p: &t.stream, skip: skipSpecial}
	d.Reset()
	return d
}

// Reset forgets everything, ready for a new sequence.
func (d *StreamDecoder) Reset() {
	d.npend, d.need = 0, 0
	d.groupFresh = true
	d.stripLeft = d.p.stripLeft
	d.clean = cleanupStream{}
	d.ids = d.ids[:0]
}

// Append decodes one more id and appends the newly completed text to dst.
// With enough capacity in dst it allocates nothing in steady state.
func (d *StreamDecoder) Append(dst []byte, id int32) []byte {
	p := d.p
	if p.kind == streamBuffered {
		d.ids = append(d.ids, id)
		return dst
	}
	var kind uint8
	var piece []byte
	if id >= 0 && int(id) < len(p.kinds) && d.t.has[id] {
		if d.skip && d.t.special[id] {
			return dst
		}
		kind, piece = p.kinds[id], p.arena[p.offs[id]:p.offs[id+1]]
	} else {
		if d.skip && p.missSkip {
			return dst
		}
		kind, piece = p.missKind, p.missPiece
	}
	switch kind {
	case pieceBytes:
		for _, b := range piece {
			dst = d.feed(dst, b)
		}
	case pieceText:
		dst = d.endGroup(dst)
		dst = d.emit(dst, piece)
	}
	return dst
}

// Flush appends what Decode of the whole sequence still has beyond what
// Append emitted (a dangling partial character becomes U+FFFD) and resets
// the decoder for a new sequence.
func (d *StreamDecoder) Flush(dst []byte) []byte {
	if d.p.kind == streamBuffered {
		dst = append(dst, d.t.Decode(d.ids, d.skip)...)
		d.Reset()
		return dst
	}
	dst = d.endGroup(dst)
	if d.t.cleanup {
		dst = d.clean.flush(dst)
	}
	d.Reset()
	return dst
}

// feed runs one byte through an incremental WHATWG UTF-8 decoder.
func (d *StreamDecoder) feed(dst []byte, b byte) []byte {
	if d.need == 0 {
		if b < 0x80 {
			d.groupFresh = false
			return d.emit(dst, []byte{b})
		}
		need, lo, hi := utf8seq.Tail(b)
		if need == 0 {
			d.groupFresh = false
			return d.emit(dst, []byte(replacementChar))
		}
		d.pend[0], d.npend, d.need, d.lower, d.upper = b, 1, need, lo, hi
		return dst
	}
	if b < d.lower || b > d.upper {
		d.need, d.npend = 0, 0
		d.groupFresh = false
		dst = d.emit(dst, []byte(replacementChar))
		return d.feed(dst, b)
	}
	d.pend[d.npend] = b
	d.npend++
	d.lower, d.upper = 0x80, 0xBF
	d.need--
	if d.need > 0 {
		return dst
	}
	n := d.npend
	d.npend = 0
	fresh := d.groupFresh
	d.groupFresh = false
	if fresh && d.p.stripBOM && n == 3 && d.pend[0] == 0xEF && d.pend[1] == 0xBB && d.pend[2] == 0xBF {
		return dst
	}
	return d.emit(dst, d.pend[:n])
}

// endGroup ends a run of byte tokens: a dangling partial character is one
// U+FFFD, and the next byte starts a fresh run.
func (d *StreamDecoder) endGroup(dst []byte) []byte {
	if d.need > 0 {
		d.need, d.npend = 0, 0
		dst = d.emit(dst, []byte(replacementChar))
	}
	d.groupFresh = true
	return dst
}

// emit passes decoded text through the leading strip and the clean-up.
func (d *StreamDecoder) emit(dst []byte, p []byte) []byte {
	if d.stripLeft > 0 {
		for d.stripLeft > 0 && len(p) > 0 && p[0] == d.p.stripByte {
			p = p[1:]
			d.stripLeft--
		}
		if len(p) > 0 {
			d.stripLeft = 0
		}
	}
	if len(p) == 0 {
		return dst
	}
	if !d.t.cleanup || d.clean.held == 0 && bytes.IndexByte(p, ' ') < 0 {
		// Every clean-up pattern starts with a space: text without one,
		// with nothing held, passes through every pass unchanged.
		return append(dst, p...)
	}
	for len(p) > 0 && d.clean.held == 0 && p[0] != ' ' {
		dst = append(dst, p[0])
		p = p[1:]
	}
	for _, b := range p {
		dst = d.clean.push(dst, 0, b)
	}
	return dst
}

// cleanupStream is the clean-up as a cascade of streaming replace-all
// passes. Each pass holds back only the bytes that may still start its
// pattern and hands everything else, replaced, to the next pass. The
// passes of the whole text run one after another, so the output of one
// can form a match for a later one (" ' " then " 're" turns "  ' re" into
// "'re"); checking only the raw text for pattern prefixes misses that.
type cleanupStream struct {
	pend [len(cleanupPairs)][4]byte // pass i's held bytes: a proper prefix of its pattern
	n    [len(cleanupPairs)]uint8
	held int // bytes held across all passes
}

// push feeds byte b to pass i and appends what leaves the last pass.
// Replace-all scans left to right and replaces the leftmost match, then
// resumes after it; holding the longest proper prefix of the pattern at
// the end and deciding as soon as it either completes or fails is the
// same scan, one byte at a time.
func (c *cleanupStream) push(dst []byte, i int, b byte) []byte {
	if i == 0 && c.held == 1 && c.n[0] == 1 && !cleanupSecond(b) {
		// The common case, a space before a word: no pattern continues
		// " "+b, so both leave every pass as they are.
		c.n[0], c.held = 0, 0
		return append(dst, ' ', b)
	}
	// Every pattern starts with a space: another byte passes a pass that
	// holds nothing unchanged.
	for b != ' ' && i < len(cleanupPairs) && c.n[i] == 0 {
		i++
	}
	if i == len(cleanupPairs) {
		return append(dst, b)
	}
	pat, rep := cleanupPairs[i][0], cleanupPairs[i][1]
	c.pend[i][c.n[i]] = b
	c.n[i]++
	c.held++
	for c.n[i] > 0 {
		k := int(c.n[i])
		if string(c.pend[i][:k]) == pat[:k] {
			if k < len(pat) {
				return dst // may still become a match
			}
			c.n[i], c.held = 0, c.held-k
			for j := 0; j < len(rep); j++ {
				dst = c.push(dst, i+1, rep[j])
			}
			return dst
		}
		// No match starts at the first held byte: it leaves this pass,
		// and the rest may still start one.
		first := c.pend[i][0]
		copy(c.pend[i][:], c.pend[i][1:k])
		c.n[i]--
		c.held--
		dst = c.push(dst, i+1, first)
	}
	return dst
}

// cleanupSecond reports whether b is the second byte of a clean-up
// pattern, or a space, which may start a match of its own.
func cleanupSecond(b byte) bool {
	switch b {
	case ' ', '.', '?', '!', ',', '\'', 'n':
		return true
	}
	return false
}

// flush ends the text: what each pass still holds can no longer match
// its own pattern but goes on through the later passes.
func (c *cleanupStream) flush(dst []byte) []byte {
	for i := range cleanupPairs {
		k := int(c.n[i])
		var held [4]byte
		copy(held[:], c.pend[i][:k])
		c.n[i], c.held = 0, c.held-k
		for _, b := range held[:k] {
			dst = c.push(dst, i+1, b)
		}
	}
	return dst
}
