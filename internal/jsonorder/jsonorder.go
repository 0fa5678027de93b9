// Package jsonorder parses JSON into values that keep the order of object
// members, which encoding/json's maps lose. The grammar compiler needs it
// (properties are generated in the schema's order) and so does the mask
// benchmark (instances are serialised in their file's key order).
package jsonorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of JSON values.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Member is one name/value pair of an object.
type Member struct {
	Name  string
	Value *Value
}

// Value is a parsed JSON value.
type Value struct {
	Kind    Kind
	Bool    bool
	Number  json.Number // the number as written
	Str     string
	Items   []*Value
	Members []Member // in document order; a repeated name keeps every copy
}

// Get returns the value of the first member called name, or nil.
func (v *Value) Get(name string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for _, m := range v.Members {
		if m.Name == name {
			return m.Value
		}
	}
	return nil
}

// Parse parses one JSON document.
func Parse(data []byte) (*Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parse(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func parse(dec *json.Decoder) (*Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &Value{Kind: Null}, nil
	case bool:
		return &Value{Kind: Bool, Bool: t}, nil
	case json.Number:
		return &Value{Kind: Number, Number: t}, nil
	case string:
		return &Value{Kind: String, Str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &Value{Kind: Array, Items: []*Value{}}
			for dec.More() {
				item, err := parse(dec)
				if err != nil {
					return nil, err
				}
				v.Items = append(v.Items, item)
			}
			_, err := dec.Token()
			return v, err
		case '{':
			v := &Value{Kind: Object, Members: []Member{}}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				item, err := parse(dec)
				if err != nil {
					return nil, err
				}
				v.Members = append(v.Members, Member{Name: k.(string), Value: item})
			}
			_, err := dec.Token()
			return v, err
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// Python serialises v as Python's json.dumps(v, ensure_ascii=False) does:
// separators ", " and ": ", members in order, non-ASCII characters as they
// are, control characters escaped, integers as written and floats in
// Python's repr form.
func (v *Value) Python() string {
	var b strings.Builder
	v.python(&b)
	return b.String()
}

func (v *Value) python(b *strings.Builder) {
	switch v.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case Number:
		b.WriteString(pythonNumber(string(v.Number)))
	case String:
		QuoteTo(b, v.Str)
	case Array:
		b.WriteByte('[')
		for i, it := range v.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.python(b)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, m := range v.Members {
			if i > 0 {
				b.WriteString(", ")
			}
			QuoteTo(b, m.Name)
			b.WriteString(": ")
			m.Value.python(b)
		}
		b.WriteByte('}')
	}
}

// pythonNumber spells a JSON number as Python re-serialises it after
// json.loads: integers unchanged, floats as repr(float).
func pythonNumber(s string) string {
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	switch {
	case f != f:
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	// repr(float): shortest round-trip digits; exponent form when the
	// exponent is < -4 or >= 16, with at least two exponent digits.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	if x < -4 || x >= 16 {
		sign := "+"
		if x < 0 {
			sign, x = "-", -x
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, x)
	}
	out := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(out, ".") {
		out += ".0"
	}
	return out
}

// QuoteTo writes s as a JSON string the way json.dumps(ensure_ascii=False)
// does: \" \\ \n \r \t \b \f, other control characters as \u00xx, every
// other character as it is.
func QuoteTo(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
