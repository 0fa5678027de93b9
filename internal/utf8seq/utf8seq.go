// Package utf8seq is the one table of well-formed UTF-8 (RFC 3629, as
// Unicode's Table 3-7 states it) the tokenizer's decoder and the grammar's
// byte automata share: how many bytes follow a lead byte, and the range
// the first of them must lie in.
package utf8seq

// Tail returns, for the lead byte of a multi-byte UTF-8 encoding, the
// number of bytes after it and the range of the first of them; the others
// are continuation bytes (0x80 to 0xBF). need is 0 for a byte that cannot
// lead a multi-byte sequence (ASCII, continuation bytes, 0xC0, 0xC1, 0xF5
// and above).
func Tail(lead byte) (need int, lo, hi byte) {
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		return 1, 0x80, 0xBF
	case lead == 0xE0:
		return 2, 0xA0, 0xBF
	case lead == 0xED:
		return 2, 0x80, 0x9F
	case lead >= 0xE1 && lead <= 0xEF:
		return 2, 0x80, 0xBF
	case lead == 0xF0:
		return 3, 0x90, 0xBF
	case lead == 0xF4:
		return 3, 0x80, 0x8F
	case lead >= 0xF1 && lead <= 0xF3:
		return 3, 0x80, 0xBF
	}
	return 0, 0, 0
}
