package tokenizer

import "unicode/utf8"

// The reference decodes bytes with the WHATWG UTF-8 decoder (TextDecoder),
// which replaces each maximal invalid subsequence with one U+FFFD. Go's
// utf8 package replaces byte by byte, so the WHATWG rules are implemented
// here, both for decoding token bytes and for sanitising invalid input.

const replacementChar = "\uFFFD"

// utf8Bounds returns how many continuation bytes lead byte b needs and the
// allowed range of the first one; need < 0 means b cannot start a sequence.
func utf8Bounds(b byte) (need int, lower, upper byte) {
	switch {
	case b >= 0xC2 && b <= 0xDF:
		return 1, 0x80, 0xBF
	case b == 0xE0:
		return 2, 0xA0, 0xBF
	case b == 0xED:
		return 2, 0x80, 0x9F
	case b >= 0xE1 && b <= 0xEF:
		return 2, 0x80, 0xBF
	case b == 0xF0:
		return 3, 0x90, 0xBF
	case b >= 0xF1 && b <= 0xF3:
		return 3, 0x80, 0xBF
	case b == 0xF4:
		return 3, 0x80, 0x8F
	}
	return -1, 0, 0
}

// appendWHATWG appends src decoded as UTF-8 with WHATWG replacement to dst.
// When stripBOM is set a leading U+FEFF is dropped (TextDecoder's default).
func appendWHATWG(dst []byte, src []byte, stripBOM bool) []byte {
	if stripBOM && len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		src = src[3:]
	}
	if utf8.Valid(src) {
		return append(dst, src...)
	}
	i := 0
	for i < len(src) {
		b := src[i]
		if b < 0x80 {
			dst = append(dst, b)
			i++
			continue
		}
		need, lower, upper := utf8Bounds(b)
		if need < 0 {
			dst = append(dst, replacementChar...)
			i++
			continue
		}
		j := i + 1
		ok := true
		for k := 0; k < need; k++ {
			if j >= len(src) {
				dst = append(dst, replacementChar...)
				i = len(src)
				ok = false
				break
			}
			c := src[j]
			if c < lower || c > upper {
				dst = append(dst, replacementChar...)
				i = j
				ok = false
				break
			}
			lower, upper = 0x80, 0xBF
			j++
		}
		if ok {
			dst = append(dst, src[i:j]...)
			i = j
		}
	}
	return dst
}

// sanitizeUTF8 returns s with invalid UTF-8 replaced as the WHATWG decoder
// would: what a JavaScript caller would hold after TextDecoder().decode(s).
func sanitizeUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendWHATWG(make([]byte, 0, len(s)+8), []byte(s), false))
}

// utf16Len is the length of s in UTF-16 code units (JavaScript's length).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
