package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The model's vocab (up to 262k entries) and merges (up to 515k) dominate
// load time, so they are read by this small purpose-built JSON reader instead
// of encoding/json's reflection.

type jsonReader struct {
	b   []byte
	i   int
	buf []byte
}

var errJSON = errors.New("malformed JSON")

func (r *jsonReader) fail(what string) error {
	return fmt.Errorf("%w at byte %d: %s", errJSON, r.i, what)
}

func (r *jsonReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jsonReader) peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

func (r *jsonReader) expect(c byte) error {
	if r.peek() != c {
		return r.fail("want " + strconv.QuoteRune(rune(c)))
	}
	r.i++
	return nil
}

// str reads a JSON string and returns it as a new Go string.
func (r *jsonReader) str() (string, error) {
	if r.peek() != '"' {
		return "", r.fail("want string")
	}
	r.i++
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := string(r.b[start:r.i])
			r.i++
			return s, nil
		}
		if c == '\\' {
			break
		}
		r.i++
	}
	// Slow path with escapes.
	r.buf = append(r.buf[:0], r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return string(r.buf), nil
		case c == '\\':
			if r.i+1 >= len(r.b) {
				return "", r.fail("truncated escape")
			}
			e := r.b[r.i+1]
			r.i += 2
			switch e {
			case '"', '\\', '/':
				r.buf = append(r.buf, e)
			case 'b':
				r.buf = append(r.buf, '\b')
			case 'f':
				r.buf = append(r.buf, '\f')
			case 'n':
				r.buf = append(r.buf, '\n')
			case 'r':
				r.buf = append(r.buf, '\r')
			case 't':
				r.buf = append(r.buf, '\t')
			case 'u':
				u, ok := r.hex4()
				if !ok {
					return "", r.fail("bad \\u escape")
				}
				ru := rune(u)
				if utf16.IsSurrogate(ru) {
					ru = utf8.RuneError
					if r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
						save := r.i
						r.i += 2
						if u2, ok := r.hex4(); ok {
							if d := utf16.DecodeRune(rune(u), rune(u2)); d != utf8.RuneError {
								ru = d
							} else {
								r.i = save
							}
						} else {
							r.i = save
						}
					}
				}
				r.buf = utf8.AppendRune(r.buf, ru)
			default:
				return "", r.fail("bad escape")
			}
		default:
			r.buf = append(r.buf, c)
			r.i++
		}
	}
	return "", r.fail("unterminated string")
}

func (r *jsonReader) hex4() (uint16, bool) {
	if r.i+4 > len(r.b) {
		return 0, false
	}
	var v uint16
	for k := 0; k < 4; k++ {
		c := r.b[r.i+k]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(d)
	}
	r.i += 4
	return v, true
}

func (r *jsonReader) integer() (int64, error) {
	r.ws()
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		r.i++
	}
	// Tolerate a float written as an integer value (e.g. 12.0).
	if r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		for r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E' || r.b[r.i] == '+' || r.b[r.i] == '-' || (r.b[r.i] >= '0' && r.b[r.i] <= '9')) {
			r.i++
		}
		f, err := strconv.ParseFloat(string(r.b[start:r.i]), 64)
		if err != nil || f != float64(int64(f)) {
			return 0, r.fail("want integer")
		}
		return int64(f), nil
	}
	v, err := strconv.ParseInt(string(r.b[start:r.i]), 10, 64)
	if err != nil {
		return 0, r.fail("want integer")
	}
	return v, nil
}

// parseVocab reads {"token": id, ...}. All keys share one allocation.
func parseVocab(raw []byte) (map[string]int32, error) {
	r := &jsonReader{b: raw}
	if err := r.expect('{'); err != nil {
		return nil, err
	}
	type entry struct{ off, n, id int32 }
	arena := make([]byte, 0, len(raw))
	entries := make([]entry, 0, len(raw)/12)
	if r.peek() == '}' {
		r.i++
	} else {
	loop:
		for {
			k, err := r.rawStr()
			if err != nil {
				return nil, err
			}
			off := len(arena)
			arena = append(arena, k...)
			if err := r.expect(':'); err != nil {
				return nil, err
			}
			v, err := r.integer()
			if err != nil {
				return nil, err
			}
			if v < 0 || v > 1<<31-1 {
				return nil, fmt.Errorf("vocab id %d of %q out of range", v, k)
			}
			entries = append(entries, entry{int32(off), int32(len(k)), int32(v)})
			switch r.peek() {
			case ',':
				r.i++
			case '}':
				r.i++
				break loop
			default:
				return nil, r.fail("want , or }")
			}
		}
	}
	all := string(arena)
	m := make(map[string]int32, len(entries))
	for _, e := range entries {
		m[all[e.off:e.off+e.n]] = e.id
	}
	return m, nil
}

// parseMerges reads ["a b", ...] or [["a","b"], ...] and calls fn for each
// pair; a and b are only valid during the call.
func parseMerges(raw []byte, fn func(a, b []byte) error) error {
	r := &jsonReader{b: raw}
	if err := r.expect('['); err != nil {
		return err
	}
	if r.peek() == ']' {
		r.i++
		return nil
	}
	var abuf []byte
	for {
		switch r.peek() {
		case '"':
			s, err := r.rawStr()
			if err != nil {
				return err
			}
			// Split at the first space, as the reference does: "a b" or
			// "a b c" -> ("a", "b"); a missing space is an error.
			sp := bytes.IndexByte(s, ' ')
			if sp < 0 {
				return fmt.Errorf("merge %q has no space", s)
			}
			b := s[sp+1:]
			if k := bytes.IndexByte(b, ' '); k >= 0 {
				b = b[:k]
			}
			if err := fn(s[:sp], b); err != nil {
				return err
			}
		case '[':
			r.i++
			a, err := r.rawStr()
			if err != nil {
				return err
			}
			abuf = append(abuf[:0], a...)
			if err := r.expect(','); err != nil {
				return err
			}
			b, err := r.rawStr()
			if err != nil {
				return err
			}
			if err := r.expect(']'); err != nil {
				return err
			}
			if err := fn(abuf, b); err != nil {
				return err
			}
		default:
			return r.fail("want merge")
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.fail("want , or ]")
		}
	}
}

// skipValue skips one JSON value and returns its raw bytes.
func (r *jsonReader) skipValue() ([]byte, error) {
	r.ws()
	start := r.i
	if r.i >= len(r.b) {
		return nil, r.fail("want value")
	}
	switch c := r.b[r.i]; c {
	case '"':
		if err := r.skipString(); err != nil {
			return nil, err
		}
	case '{', '[':
		depth := 0
		for r.i < len(r.b) {
			switch r.b[r.i] {
			case '"':
				if err := r.skipString(); err != nil {
					return nil, err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					r.i++
					return r.b[start:r.i], nil
				}
			}
			r.i++
		}
		return nil, r.fail("unterminated value")
	default:
		for r.i < len(r.b) {
			switch r.b[r.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return r.b[start:r.i], nil
			}
			r.i++
		}
	}
	return r.b[start:r.i], nil
}

// skipString moves past the JSON string starting at r.i.
func (r *jsonReader) skipString() error {
	i := r.i + 1
	for {
		q := bytes.IndexByte(r.b[i:], '"')
		if q < 0 {
			return r.fail("unterminated string")
		}
		end := i + q
		bs := 0
		for k := end - 1; k >= i && r.b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			r.i = end + 1
			return nil
		}
		i = end + 1
	}
}

// rawStr reads a JSON string and returns its decoded bytes, which alias the
// input when there are no escapes and r.buf otherwise (valid until the next
// call).
func (r *jsonReader) rawStr() ([]byte, error) {
	if r.peek() != '"' {
		return nil, r.fail("want string")
	}
	r.i++
	start := r.i
	q := bytes.IndexByte(r.b[start:], '"')
	if q < 0 {
		return nil, r.fail("unterminated string")
	}
	if bytes.IndexByte(r.b[start:start+q], '\\') < 0 {
		r.i = start + q + 1
		return r.b[start : start+q], nil
	}
	r.i = start - 1
	s, err := r.str()
	if err != nil {
		return nil, err
	}
	r.buf = append(r.buf[:0], s...)
	return r.buf, nil
}

// objectFields returns the raw values of a JSON object's fields, aliasing
// data (no copies); a later duplicate key wins, as in encoding/json.
func objectFields(data []byte) (map[string][]byte, error) {
	r := &jsonReader{b: data}
	if err := r.expect('{'); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	if r.peek() == '}' {
		return out, nil
	}
	for {
		k, err := r.str()
		if err != nil {
			return nil, err
		}
		if err := r.expect(':'); err != nil {
			return nil, err
		}
		v, err := r.skipValue()
		if err != nil {
			return nil, err
		}
		out[k] = v
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			return out, nil
		default:
			return nil, r.fail("want , or }")
		}
	}
}

// countMerges estimates the number of merges in a merges array from its
// quotes: two per "a b" string, four per ["a", "b"] pair.
func countMerges(raw []byte) int {
	q := bytes.Count(raw, []byte{'"'})
	r := &jsonReader{b: raw}
	if r.expect('[') == nil && r.peek() == '[' {
		return q / 4
	}
	return q / 2
}
