package tokenizer

import (
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

// parseVocab reads {"token": id, ...}.
func parseVocab(raw []byte) (map[string]int32, error) {
	r := &jsonReader{b: raw}
	if err := r.expect('{'); err != nil {
		return nil, err
	}
	m := make(map[string]int32, len(raw)/16)
	if r.peek() == '}' {
		r.i++
		return m, nil
	}
	for {
		k, err := r.str()
		if err != nil {
			return nil, err
		}
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
		m[k] = int32(v)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return m, nil
		default:
			return nil, r.fail("want , or }")
		}
	}
}

// parseMerges reads ["a b", ...] or [["a","b"], ...] and calls fn for each.
func parseMerges(raw []byte, fn func(a, b string) error) error {
	r := &jsonReader{b: raw}
	if err := r.expect('['); err != nil {
		return err
	}
	if r.peek() == ']' {
		r.i++
		return nil
	}
	for {
		switch r.peek() {
		case '"':
			s, err := r.str()
			if err != nil {
				return err
			}
			// Split at the first space, as the reference does: "a b" or
			// "a b c" -> ("a", "b"); a missing space is an error.
			sp := -1
			for k := 0; k < len(s); k++ {
				if s[k] == ' ' {
					sp = k
					break
				}
			}
			if sp < 0 {
				return fmt.Errorf("merge %q has no space", s)
			}
			b := s[sp+1:]
			for k := 0; k < len(b); k++ {
				if b[k] == ' ' {
					b = b[:k]
					break
				}
			}
			if err := fn(s[:sp], b); err != nil {
				return err
			}
		case '[':
			r.i++
			a, err := r.str()
			if err != nil {
				return err
			}
			if err := r.expect(','); err != nil {
				return err
			}
			b, err := r.str()
			if err != nil {
				return err
			}
			if err := r.expect(']'); err != nil {
				return err
			}
			if err := fn(a, b); err != nil {
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
