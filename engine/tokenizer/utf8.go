package tokenizer

import (
	"unicode/utf8"

	"github.com/prism-local/prism/internal/utf8seq"
)

// The reference decodes bytes with the WHATWG UTF-8 decoder (TextDecoder),
// which replaces each maximal invalid subsequence with one U+FFFD. Go's
// utf8 package replaces byte by byte, so the WHATWG rules are implemented
// here, both for decoding token bytes and for sanitising invalid input.

const replacementChar = "\uFFFD"

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
		need, lower, upper := utf8seq.Tail(b)
		if need == 0 {
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
