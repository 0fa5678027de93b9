package tokenizer

import "unicode/utf8"

// Hand-written scanners for the Split regexes real model families ship.
// Each patternMatcher reports the end of the match starting exactly at i,
// or -1. They follow the reference's regex semantics (JavaScript, after its
// rewrite of the Oniguruma syntax): \s is \p{White_Space}, (?i:...) folds
// ASCII letters only, alternatives are tried left to right with
// backtracking, and (?!\S) is a look-ahead. Their equality with the regexes
// is proven on the parity corpus and by FuzzScanners.

// Patterns recognised exactly as they appear in tokenizer.json.
const (
	// patQwen2 is the Qwen2/Qwen3 pattern (single digits).
	patQwen2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	// patLlama3 is the Llama-3 (cl100k-style) pattern (digit runs of up to 3).
	patLlama3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	// patO200k is the gpt-oss (o200k) pattern.
	patO200k = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	// patDigits3 is DeepSeek-V3's first split: digit runs of up to 3.
	patDigits3 = "\\p{N}{1,3}"
	// patDeepSeekCJK is DeepSeek-V3's second split: runs of common CJK/kana.
	patDeepSeekCJK = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	// patDeepSeek is DeepSeek-V3's third split.
	patDeepSeek = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

type patternMatcher func(s string, i int) int

// knownPatterns maps a Split regex to its scanner.
func knownPattern(re string) patternMatcher {
	switch re {
	case patQwen2:
		return func(s string, i int) int { return matchCL100K(s, i, 1) }
	case patLlama3:
		return func(s string, i int) int { return matchCL100K(s, i, 3) }
	case patO200k:
		return matchO200K
	case patDigits3:
		return matchDigits3
	case patDeepSeekCJK:
		return matchDeepSeekCJK
	case patDeepSeek:
		return matchDeepSeek
	}
	return nil
}

func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// scanClass advances over runes having any of the class bits.
func scanClass(s string, i int, cls uint16) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if classOf(r)&cls == 0 {
			break
		}
		i += n
	}
	return i
}

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or 0.
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	c := s[i+1]
	var d byte
	if i+2 < len(s) {
		d = s[i+2]
	}
	if fold {
		c |= 0x20
		d |= 0x20
	}
	switch c {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if d == 'e' {
			return 3
		}
	case 'l':
		if d == 'l' {
			return 3
		}
	}
	return 0
}

// matchWhitespace implements \s*[\r\n]+|\s+(?!\S)|\s+ at a whitespace rune
// (ws is the class that \s means); newlines selects whether the first
// alternative is part of the pattern.
func matchWhitespace(s string, i int, ws uint16, newlines bool) int {
	j, lastNL, last, count := i, -1, i, 0
	for j < len(s) {
		r, n := runeAt(s, j)
		if classOf(r)&ws == 0 {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = j
		}
		last = j
		j += n
		count++
	}
	if count == 0 {
		return -1
	}
	if newlines && lastNL >= 0 {
		return lastNL + 1 // \s*[\r\n]+ backtracks to the last newline of the run
	}
	if j == len(s) || count == 1 {
		return j // \s+(?!\S) at the end of the text, or \s+
	}
	return last // \s+(?!\S) gives back the last whitespace rune
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// matchCL100K matches the Qwen2 / Llama-3 pattern; maxDigits is 1 or 3.
func matchCL100K(s string, i int, maxDigits int) int {
	r, n := runeAt(s, i)
	c := classOf(r)
	if r == '\'' {
		if l := contraction(s, i, true); l > 0 {
			return i + l
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c&cL != 0 {
		return scanClass(s, i+n, cL)
	}
	if !isCRLF(r) && c&cN == 0 && i+n < len(s) {
		if r2, n2 := runeAt(s, i+n); classOf(r2)&cL != 0 {
			return scanClass(s, i+n+n2, cL)
		}
	}
	// \p{N}{1,k}
	if c&cN != 0 {
		j := i + n
		for k := 1; k < maxDigits && j < len(s); k++ {
			r2, n2 := runeAt(s, j)
			if classOf(r2)&cN == 0 {
				break
			}
			j += n2
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	if e := matchPunct(s, i, r, n, cWS|cL|cN, "\r\n"); e >= 0 {
		return e
	}
	if c&cWS != 0 {
		return matchWhitespace(s, i, cWS, true)
	}
	return -1
}

// matchPunct matches ` ?[^X]+[tail]*` where X is the class mask notCls and
// tail is a set of ASCII bytes.
func matchPunct(s string, i int, r rune, n int, notCls uint16, tail string) int {
	j := i
	if r == ' ' {
		j = i + n
		if j >= len(s) {
			return -1
		}
		r, n = runeAt(s, j)
	}
	if classOf(r)&notCls != 0 {
		return -1
	}
	j += n
	for j < len(s) {
		r2, n2 := runeAt(s, j)
		if classOf(r2)&notCls != 0 {
			break
		}
		j += n2
	}
	for j < len(s) && isTail(s[j], tail) {
		j++
	}
	return j
}

func isTail(b byte, tail string) bool {
	for k := 0; k < len(tail); k++ {
		if tail[k] == b {
			return true
		}
	}
	return false
}

const (
	o200kUpper = cLu | cLt | cLm | cLo | cM // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	o200kLower = cLl | cLm | cLo | cM       // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

// o200kWordA matches [Upper]*[Lower]+ at p, with the backtracking the regex
// does when the two classes overlap.
func o200kWordA(s string, p int) int {
	a, lastLowerEnd := p, -1
	for a < len(s) {
		r, n := runeAt(s, a)
		c := classOf(r)
		if c&o200kUpper == 0 {
			break
		}
		a += n
		if c&o200kLower != 0 {
			lastLowerEnd = a
		}
	}
	if a < len(s) {
		if r, n := runeAt(s, a); classOf(r)&o200kLower != 0 {
			return scanClass(s, a+n, o200kLower)
		}
	}
	// [Upper]* gives back runes until [Lower]+ can take one.
	return lastLowerEnd
}

// o200kWordB matches [Upper]+[Lower]* at p.
func o200kWordB(s string, p int) int {
	a := scanClass(s, p, o200kUpper)
	if a == p {
		return -1
	}
	return scanClass(s, a, o200kLower)
}

// matchO200K matches the gpt-oss pattern.
func matchO200K(s string, i int) int {
	r, n := runeAt(s, i)
	c := classOf(r)
	prefix := !isCRLF(r) && c&(cL|cN) == 0
	for _, word := range [2]func(string, int) int{o200kWordA, o200kWordB} {
		if prefix && i+n < len(s) {
			if e := word(s, i+n); e >= 0 {
				return e + contraction(s, e, true)
			}
		}
		if e := word(s, i); e >= 0 {
			return e + contraction(s, e, true)
		}
	}
	if c&cN != 0 {
		j := i + n
		for k := 1; k < 3 && j < len(s); k++ {
			r2, n2 := runeAt(s, j)
			if classOf(r2)&cN == 0 {
				break
			}
			j += n2
		}
		return j
	}
	if e := matchPunct(s, i, r, n, cWS|cL|cN, "\r\n/"); e >= 0 {
		return e
	}
	if c&cWS != 0 {
		return matchWhitespace(s, i, cWS, true)
	}
	return -1
}

func matchDigits3(s string, i int) int {
	r, n := runeAt(s, i)
	if classOf(r)&cN == 0 {
		return -1
	}
	j := i + n
	for k := 1; k < 3 && j < len(s); k++ {
		r2, n2 := runeAt(s, j)
		if classOf(r2)&cN == 0 {
			break
		}
		j += n2
	}
	return j
}

func isDeepSeekCJK(r rune) bool {
	return (r >= 0x4e00 && r <= 0x9fa5) || (r >= 0x3040 && r <= 0x309f) || (r >= 0x30a0 && r <= 0x30ff)
}

func matchDeepSeekCJK(s string, i int) int {
	j := i
	for j < len(s) {
		r, n := runeAt(s, j)
		if !isDeepSeekCJK(r) {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}

func isASCIIPunct(b byte) bool {
	return (b >= '!' && b <= '/') || (b >= ':' && b <= '@') || (b >= '[' && b <= '`') || (b >= '{' && b <= '~')
}

func isASCIILetter(b byte) bool { return (b|0x20) >= 'a' && (b|0x20) <= 'z' }

// matchDeepSeek matches DeepSeek-V3's third split pattern.
func matchDeepSeek(s string, i int) int {
	// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
	if isASCIIPunct(s[i]) && i+1 < len(s) && isASCIILetter(s[i+1]) {
		j := i + 2
		for j < len(s) && isASCIILetter(s[j]) {
			j++
		}
		return j
	}
	r, n := runeAt(s, i)
	c := classOf(r)
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if !isCRLF(r) && c&(cL|cP|cS) == 0 && i+n < len(s) {
		if r2, n2 := runeAt(s, i+n); classOf(r2)&(cL|cM) != 0 {
			return scanClass(s, i+n+n2, cL|cM)
		}
	}
	if c&(cL|cM) != 0 {
		return scanClass(s, i+n, cL|cM)
	}
	// ' ?[\p{P}\p{S}]+[\r\n]*'
	j := i
	rr, nn := r, n
	if r == ' ' && i+n < len(s) {
		if r2, n2 := runeAt(s, i+n); classOf(r2)&(cP|cS) != 0 {
			j, rr, nn = i+n, r2, n2
		}
	}
	if classOf(rr)&(cP|cS) != 0 {
		j = scanClass(s, j+nn, cP|cS)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	if c&cWS != 0 {
		return matchWhitespace(s, i, cWS, true)
	}
	return -1
}

// matchGPT2 is the ByteLevel pre-tokenizer's own pattern (use_regex), a
// JavaScript literal in the reference, so \s there is JavaScript's \s and the
// contractions are case-sensitive:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func matchGPT2(s string, i int) int {
	r, n := runeAt(s, i)
	if r == '\'' {
		if l := contraction(s, i, false); l > 0 {
			return i + l
		}
	}
	j, rr, nn := i, r, n
	if r == ' ' && i+n < len(s) {
		j = i + n
		rr, nn = runeAt(s, j)
	}
	c := classOf(rr)
	switch {
	case c&cL != 0:
		return scanClass(s, j+nn, cL)
	case c&cN != 0:
		return scanClass(s, j+nn, cN)
	case c&cJSWS == 0:
		k := j + nn
		for k < len(s) {
			r2, n2 := runeAt(s, k)
			if classOf(r2)&(cJSWS|cL|cN) != 0 {
				break
			}
			k += n2
		}
		return k
	}
	if classOf(r)&cJSWS != 0 {
		return matchWhitespace(s, i, cJSWS, false)
	}
	return -1
}
