package tokenizer

// Character classes the pre-tokenizer scanners need, as bit flags. The
// tables in unicode_tables.go are generated from the reference's JavaScript
// engine (`node testdata/reference/gen-unicode.mjs`) so that \p{L}, \p{N},
// White_Space and the rest mean exactly what they mean to the reference,
// whose Unicode version is newer than Go's.
const (
	cL    uint16 = 1 << iota // \p{L}
	cLu                      // \p{Lu}
	cLl                      // \p{Ll}
	cLt                      // \p{Lt}
	cLm                      // \p{Lm}
	cLo                      // \p{Lo}
	cM                       // \p{M}
	cN                       // \p{N}
	cP                       // \p{P}
	cS                       // \p{S}
	cWS                      // \p{White_Space} (what \s means in the families' patterns)
	cJSWS                    // JavaScript's own \s (adds U+FEFF, lacks U+0085)
	cNd                      // \p{Nd}
)

// classOf returns the class flags of r.
func classOf(r rune) uint16 {
	if r < 128 {
		return asciiClass[r]
	}
	// Binary search for the last run starting at or before r.
	lo, hi := 0, len(classStarts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if classStarts[m] <= r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	return classMasks[lo-1]
}
