package wire

import (
	"bytes"
	"encoding/json"
)

// Content is a message's content: a string, a list of parts, or absent
// (null or not sent).
type Content struct {
	// Text is the content when it was sent as a string.
	Text string
	// Parts is the content when it was sent as a list.
	Parts []ContentPart
	// Kind tells which of the forms was sent.
	Kind ContentKind
}

// ContentKind is the form a Content was sent in.
type ContentKind uint8

// The forms of a Content.
const (
	ContentAbsent ContentKind = iota // null or not sent
	ContentString
	ContentParts
)

func (c *Content) decodeWire(raw []byte, path string) *Error {
	*c = Content{}
	return decodeTextOrParts(raw, path, &c.Text, &c.Parts, &c.Kind)
}

// decodeTextOrParts decodes content sent as a string, a list of parts or
// null, setting kind to the form it came in.
func decodeTextOrParts[P any](raw []byte, path string, text *string, parts *[]P, kind *ContentKind) *Error {
	switch {
	case string(raw) == "null":
		return nil
	case raw[0] == '"':
		*kind = ContentString
		return decodeInto(raw, text, path)
	case raw[0] == '[':
		*kind = ContentParts
		return decodeInto(raw, parts, path)
	}
	return invalid(path, "%s: want a string or an array of content parts, got %s", path, kindOf(raw))
}

// MarshalJSON writes the form the content was sent in.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Kind {
	case ContentString:
		return json.Marshal(c.Text)
	case ContentParts:
		return json.Marshal(c.Parts)
	}
	return []byte("null"), nil
}

// String returns the text of the content: the string, or the text of its
// text parts joined without a separator (the parts of one message are one
// text, as OpenAI treats them).
func (c Content) String() string {
	if c.Kind != ContentParts {
		return c.Text
	}
	var b bytes.Buffer
	for _, p := range c.Parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// Stop is the stop parameter: one string or a list of strings.
type Stop []string

func (s *Stop) decodeWire(raw []byte, path string) *Error {
	switch {
	case string(raw) == "null":
		*s = nil
	case raw[0] == '"':
		var one string
		if err := decodeInto(raw, &one, path); err != nil {
			return err
		}
		*s = Stop{one}
	case raw[0] == '[':
		var list []string
		if err := decodeInto(raw, &list, path); err != nil {
			return err
		}
		*s = list
	default:
		return invalid(path, "%s: want a string or an array of strings, got %s", path, kindOf(raw))
	}
	return nil
}
