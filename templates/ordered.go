package templates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of caller JSON turned into template
// values, so a hostile body cannot make the decoder recurse without end.
const maxJSONDepth = 128

// decodeJSON decodes one JSON value into template values: objects become
// ordered mappings, arrays lists, numbers int (when integral, as the
// reference runtime treats them) or float64. It is a small scanner of its
// own because the tools and arguments of every request pass through it.
func decodeJSON(raw []byte, b *budget) (any, error) {
	d := jsonScanner{data: raw}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.pos != len(d.data) {
		return nil, d.errorf("unexpected data after the JSON value")
	}
	return v, nil
}

type jsonScanner struct {
	data []byte
	pos  int
}

func (d *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: "+format, append([]any{d.pos}, args...)...)
}

func (d *jsonScanner) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonScanner) value(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d levels", maxJSONDepth)
	}
	d.space()
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		d.pos++
		o := newOmap(4)
		d.space()
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			return o, nil
		}
		for {
			d.space()
			if d.pos >= len(d.data) || d.data[d.pos] != '"' {
				return nil, d.errorf("expected an object key")
			}
			key, err := d.str()
			if err != nil {
				return nil, err
			}
			d.space()
			if d.pos >= len(d.data) || d.data[d.pos] != ':' {
				return nil, d.errorf("expected ':'")
			}
			d.pos++
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			o.put(key, v)
			d.space()
			if d.pos >= len(d.data) {
				return nil, d.errorf("unexpected end in an object")
			}
			if d.data[d.pos] == ',' {
				d.pos++
				continue
			}
			if d.data[d.pos] == '}' {
				d.pos++
				return o, nil
			}
			return nil, d.errorf("expected ',' or '}'")
		}
	case c == '[':
		d.pos++
		list := []any{}
		d.space()
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			return list, nil
		}
		for {
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			d.space()
			if d.pos >= len(d.data) {
				return nil, d.errorf("unexpected end in an array")
			}
			if d.data[d.pos] == ',' {
				d.pos++
				continue
			}
			if d.data[d.pos] == ']' {
				d.pos++
				return list, nil
			}
			return nil, d.errorf("expected ',' or ']'")
		}
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, d.errorf("unexpected character %q", d.data[d.pos])
}

func (d *jsonScanner) literal(word string) error {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(word)) {
		return d.errorf("expected %s", word)
	}
	d.pos += len(word)
	return nil
}

// str reads a string; one without escapes is copied out directly, one
// with escapes goes through encoding/json for exact unescaping.
func (d *jsonScanner) str() (string, error) {
	start := d.pos
	d.pos++
	escaped := false
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '\\':
			escaped = true
			d.pos += 2
			continue
		case c == '"':
			d.pos++
			if s := d.data[start+1 : d.pos-1]; !escaped && utf8.Valid(s) {
				return string(s), nil
			}
			// Escapes, or invalid UTF-8 (replaced by U+FFFD), the way
			// encoding/json reads them.
			var s string
			if err := json.Unmarshal(d.data[start:d.pos], &s); err != nil {
				return "", d.errorf("bad string: %w", err)
			}
			return s, nil
		case c < 0x20:
			return "", d.errorf("control character in a string")
		}
		d.pos++
	}
	return "", d.errorf("unterminated string")
}

func (d *jsonScanner) number() (any, error) {
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c >= '0' && c <= '9' {
			d.pos++
			continue
		}
		break
	}
	return numberValue(json.Number(d.data[start:d.pos]))
}

// maxSafeInteger is the largest integer a float64 holds exactly.
const maxSafeInteger = 1<<53 - 1

func numberValue(n json.Number) (any, error) {
	if !validNumber(string(n)) {
		return nil, fmt.Errorf("invalid JSON number %q", string(n))
	}
	// Out of float64's range parses to ±Inf (or 0), as JSON.parse does.
	f, _ := strconv.ParseFloat(string(n), 64)
	if f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger {
		return int(f), nil
	}
	return f, nil
}

// toTemplateValue turns a Go value handed in by the caller (Extra) into a
// template value: json.RawMessage is decoded with its key order kept;
// strings, booleans, numbers and nil pass as they are; anything else goes
// through its JSON encoding (a struct keeps its field order, a Go map's
// keys are sorted).
func toTemplateValue(v any, b *budget) (any, error) {
	switch t := v.(type) {
	case nil, string, bool, int, float64:
		return t, nil
	case json.RawMessage:
		return decodeJSON(t, b)
	case []byte:
		return string(t), nil
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, json.Number:
		return decodeJSON([]byte(fmt.Sprint(t)), b)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(raw, b)
}

// validNumber checks the JSON number grammar, which ParseFloat is looser
// about (it takes "0x1p3", "+1", "Inf").
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i == len(s) {
		return false
	}
	if s[i] == '0' {
		i++
	} else if s[i] >= '1' && s[i] <= '9' {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}
