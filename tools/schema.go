package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Schema is a tool's parameters JSON Schema, compiled for checking argument
// text as it is generated. It understands type, properties, required,
// additionalProperties, items and enum; other keywords (descriptions,
// formats, bounds) are ignored, which only makes it more permissive.
//
// A sampler can use Check to keep arguments inside the schema: a candidate
// token whose text makes the arguments Invalid is rejected and another one
// drawn. (The engine does not do this yet; Prism only forces the call's
// opening.)
type Schema struct {
	types      []string // empty: any
	props      map[string]*Schema
	names      []string // property names, for key-prefix checks
	required   []string
	closed     bool    // additionalProperties: false
	extra      *Schema // additionalProperties as a schema
	items      *Schema
	enum       []any
	enumString []string // the string members of enum
}

// Viability is the state of a text checked against a Schema.
type Viability uint8

const (
	// Invalid: no continuation of the text can satisfy the schema.
	Invalid Viability = iota
	// Viable: the text is a prefix of some value the schema accepts.
	Viable
	// Complete: the text is a whole value the schema accepts.
	Complete
)

// String returns "invalid", "viable" or "complete".
func (v Viability) String() string {
	switch v {
	case Viable:
		return "viable"
	case Complete:
		return "complete"
	}
	return "invalid"
}

// CompileSchema compiles a JSON Schema object (a tool's function.parameters).
// Empty input or {} accepts any value.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &Schema{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("tools: schema is not a JSON object: %w", err)
	}
	return compile(m, 0)
}

// ToolSchema compiles the parameters schema of a tool definition.
func ToolSchema(tool json.RawMessage) (*Schema, error) {
	var t struct {
		Function struct {
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tool, &t); err != nil {
		return nil, err
	}
	return CompileSchema(t.Function.Parameters)
}

func compile(m map[string]any, depth int) (*Schema, error) {
	if depth > 64 {
		return nil, fmt.Errorf("tools: schema nested too deeply")
	}
	s := &Schema{}
	switch t := m["type"].(type) {
	case string:
		s.types = []string{t}
	case []any:
		for _, x := range t {
			if str, ok := x.(string); ok {
				s.types = append(s.types, str)
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		s.props = map[string]*Schema{}
		for name, v := range props {
			sub, _ := v.(map[string]any)
			c, err := compile(sub, depth+1)
			if err != nil {
				return nil, err
			}
			s.props[name] = c
			s.names = append(s.names, name)
		}
		slices.Sort(s.names)
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if str, ok := r.(string); ok {
				s.required = append(s.required, str)
			}
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		s.closed = !ap
	case map[string]any:
		c, err := compile(ap, depth+1)
		if err != nil {
			return nil, err
		}
		s.extra = c
	}
	if it, ok := m["items"].(map[string]any); ok {
		c, err := compile(it, depth+1)
		if err != nil {
			return nil, err
		}
		s.items = c
	}
	if e, ok := m["enum"].([]any); ok {
		s.enum = e
		for _, x := range e {
			if str, ok := x.(string); ok {
				s.enumString = append(s.enumString, str)
			}
		}
	}
	return s, nil
}

func (s *Schema) allows(t string) bool {
	if s == nil || len(s.types) == 0 {
		return true
	}
	if t == "integer" {
		return slices.Contains(s.types, "integer") || slices.Contains(s.types, "number")
	}
	return slices.Contains(s.types, t)
}

// Check reports whether text — the arguments generated so far — can still
// become a value the schema accepts.
func (s *Schema) Check(text string) Viability {
	c := checker{text: text}
	i, st := c.value(s, 0, 0)
	switch st {
	case stBad:
		return Invalid
	case stMore:
		return Viable
	}
	for ; i < len(text); i++ {
		if !isSpace(text[i]) {
			return Invalid
		}
	}
	return Complete
}

type checkState uint8

const (
	stBad  checkState = iota
	stMore            // the text ended inside the value
	stDone            // the value ended before index returned
)

type checker struct{ text string }

func (c *checker) skip(i int) int {
	for i < len(c.text) && isSpace(c.text[i]) {
		i++
	}
	return i
}

func (c *checker) value(s *Schema, i, depth int) (int, checkState) {
	if depth > 256 {
		return i, stBad
	}
	i = c.skip(i)
	if i == len(c.text) {
		return i, stMore
	}
	start := i
	var j int
	var st checkState
	switch ch := c.text[i]; {
	case ch == '{':
		if !s.allows("object") {
			return i, stBad
		}
		j, st = c.object(s, i+1, depth)
	case ch == '[':
		if !s.allows("array") {
			return i, stBad
		}
		j, st = c.array(s, i+1, depth)
	case ch == '"':
		if !s.allows("string") {
			return i, stBad
		}
		j, st = c.str(i + 1)
		if st == stMore && s != nil && len(s.enum) > 0 && !strings.Contains(c.text[i+1:], `\`) {
			if !slices.ContainsFunc(s.enumString, func(e string) bool { return strings.HasPrefix(e, c.text[i+1:]) }) {
				return i, stBad
			}
		}
	case ch == '-' || (ch >= '0' && ch <= '9'):
		var integer bool
		j, st, integer = c.number(i)
		if !s.allows("number") && (!s.allows("integer") || !integer) {
			return i, stBad
		}
	case ch == 't' || ch == 'f':
		if !s.allows("boolean") {
			return i, stBad
		}
		word := "true"
		if ch == 'f' {
			word = "false"
		}
		j, st = c.literal(i, word)
	case ch == 'n':
		if !s.allows("null") {
			return i, stBad
		}
		j, st = c.literal(i, "null")
	default:
		return i, stBad
	}
	if st == stDone && s != nil && len(s.enum) > 0 {
		var v any
		if json.Unmarshal([]byte(c.text[start:j]), &v) != nil {
			return i, stBad
		}
		if !slices.ContainsFunc(s.enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
			return i, stBad
		}
	}
	return j, st
}

func (c *checker) object(s *Schema, i, depth int) (int, checkState) {
	var seen []string
	first := true
	for {
		i = c.skip(i)
		if i == len(c.text) {
			return i, stMore
		}
		if c.text[i] == '}' && first {
			return c.closeObject(s, seen, i)
		}
		if c.text[i] != '"' {
			return i, stBad
		}
		j, st := c.str(i + 1)
		if st == stBad {
			return j, stBad
		}
		if st == stMore {
			partial := c.text[i+1:]
			if s != nil && s.closed && !strings.Contains(partial, `\`) &&
				!slices.ContainsFunc(s.names, func(n string) bool { return strings.HasPrefix(n, partial) && !slices.Contains(seen, n) }) {
				return i, stBad
			}
			return j, stMore
		}
		var key string
		if json.Unmarshal([]byte(c.text[i:j]), &key) != nil || slices.Contains(seen, key) {
			return i, stBad
		}
		var sub *Schema
		if s != nil {
			if p, ok := s.props[key]; ok {
				sub = p
			} else if s.closed {
				return i, stBad
			} else {
				sub = s.extra
			}
		}
		seen = append(seen, key)
		i = c.skip(j)
		if i == len(c.text) {
			return i, stMore
		}
		if c.text[i] != ':' {
			return i, stBad
		}
		i, st = c.value(sub, i+1, depth+1)
		if st != stDone {
			return i, st
		}
		i = c.skip(i)
		if i == len(c.text) {
			return i, stMore
		}
		switch c.text[i] {
		case ',':
			i++
			first = false
		case '}':
			return c.closeObject(s, seen, i)
		default:
			return i, stBad
		}
	}
}

func (c *checker) closeObject(s *Schema, seen []string, i int) (int, checkState) {
	if s != nil {
		for _, r := range s.required {
			if !slices.Contains(seen, r) {
				return i, stBad
			}
		}
	}
	return i + 1, stDone
}

func (c *checker) array(s *Schema, i, depth int) (int, checkState) {
	var items *Schema
	if s != nil {
		items = s.items
	}
	i = c.skip(i)
	if i == len(c.text) {
		return i, stMore
	}
	if c.text[i] == ']' {
		return i + 1, stDone
	}
	for {
		var st checkState
		i, st = c.value(items, i, depth+1)
		if st != stDone {
			return i, st
		}
		i = c.skip(i)
		if i == len(c.text) {
			return i, stMore
		}
		switch c.text[i] {
		case ',':
			i++
		case ']':
			return i + 1, stDone
		default:
			return i, stBad
		}
	}
}

// str scans a string body from i (after the opening quote).
func (c *checker) str(i int) (int, checkState) {
	for i < len(c.text) {
		switch ch := c.text[i]; {
		case ch == '"':
			return i + 1, stDone
		case ch == '\\':
			if i+1 == len(c.text) {
				return i + 1, stMore
			}
			switch c.text[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				k := i + 2
				for ; k < i+6 && k < len(c.text); k++ {
					if !isHex(c.text[k]) {
						return k, stBad
					}
				}
				i = k
			default:
				return i, stBad
			}
		case ch < 0x20:
			return i, stBad
		default:
			i++
		}
	}
	return i, stMore
}

// number scans a JSON number from i; integer reports no fraction or exponent.
func (c *checker) number(i int) (int, checkState, bool) {
	start := i
	if c.text[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(c.text) && c.text[i] >= '0' && c.text[i] <= '9' {
			i++
			n++
		}
		return n
	}
	intStart := i
	n := digits()
	if i == len(c.text) {
		return i, stMore, true
	}
	if n == 0 || (n > 1 && c.text[intStart] == '0') {
		return start, stBad, false
	}
	integer := true
	if c.text[i] == '.' {
		integer = false
		i++
		if digits() == 0 {
			if i == len(c.text) {
				return i, stMore, false
			}
			return start, stBad, false
		}
	}
	if i < len(c.text) && (c.text[i] == 'e' || c.text[i] == 'E') {
		integer = false
		i++
		if i < len(c.text) && (c.text[i] == '+' || c.text[i] == '-') {
			i++
		}
		if digits() == 0 {
			if i == len(c.text) {
				return i, stMore, false
			}
			return start, stBad, false
		}
	}
	if i == len(c.text) {
		return i, stMore, integer
	}
	return i, stDone, integer
}

func (c *checker) literal(i int, word string) (int, checkState) {
	rest := c.text[i:]
	if len(rest) < len(word) {
		if strings.HasPrefix(word, rest) {
			return len(c.text), stMore
		}
		return i, stBad
	}
	if rest[:len(word)] != word {
		return i, stBad
	}
	return i + len(word), stDone
}
