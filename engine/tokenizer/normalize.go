package tokenizer

import (
	"encoding/json"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a section of input text before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

type normSequence []normalizer

func (q normSequence) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

type normUnicode struct{ form norm.Form }

func (n normUnicode) normalize(s string) string { return n.form.String(s) }

type normPrepend struct{ prefix string }

func (n normPrepend) normalize(s string) string { return n.prefix + s }

type normReplace struct{ old, new string }

func (n normReplace) normalize(s string) string { return strings.ReplaceAll(s, n.old, n.new) }

type normStrip struct{ left, right bool }

func (n normStrip) normalize(s string) string {
	if n.left {
		s = trimStartJS(s)
	}
	if n.right {
		s = trimEndJS(s)
	}
	return s
}

// trimStartJS and trimEndJS trim what JavaScript's trimStart/trimEnd trim.
func trimStartJS(s string) string {
	for len(s) > 0 {
		r, n := runeAt(s, 0)
		if classOf(r)&cJSWS == 0 {
			break
		}
		s = s[n:]
	}
	return s
}

func trimEndJS(s string) string {
	for len(s) > 0 {
		r, n := lastRune(s)
		if classOf(r)&cJSWS == 0 {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func lastRune(s string) (rune, int) {
	i := len(s) - 1
	for i > 0 && s[i]&0xC0 == 0x80 && len(s)-i < 4 {
		i--
	}
	r, n := runeAt(s, i)
	if i+n != len(s) {
		return rune(s[len(s)-1]), 1
	}
	return r, n
}

type componentJSON struct {
	Type string `json:"type"`
}

// stringPattern reads a {"String": "..."} pattern; a Regex pattern is
// reported as unsupported for the component.
func stringPattern(raw json.RawMessage, component string) (string, error) {
	var p struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", badComponent(component, "pattern: %w", err)
	}
	if p.String != nil {
		return *p.String, nil
	}
	if p.Regex != nil {
		return "", unsupported(component, "regex pattern "+*p.Regex)
	}
	return "", badComponent(component, "pattern has neither String nor Regex")
}

func buildNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var head componentJSON
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, badComponent("normalizer", "%w", err)
	}
	comp := "normalizer." + head.Type
	switch head.Type {
	case "Sequence":
		var c struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		seq := normSequence{}
		for _, r := range c.Normalizers {
			n, err := buildNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "NFC":
		return normUnicode{norm.NFC}, nil
	case "NFD":
		return normUnicode{norm.NFD}, nil
	case "NFKC":
		return normUnicode{norm.NFKC}, nil
	case "NFKD":
		return normUnicode{norm.NFKD}, nil
	case "Prepend":
		var c struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		return normPrepend{c.Prepend}, nil
	case "Replace":
		var c struct {
			Pattern json.RawMessage `json:"pattern"`
			Content string          `json:"content"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		old, err := stringPattern(c.Pattern, comp)
		if err != nil {
			return nil, err
		}
		if old == "" {
			return nil, unsupported(comp, "empty pattern")
		}
		return normReplace{old, c.Content}, nil
	case "Strip":
		var c struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, badComponent(comp, "%w", err)
		}
		return normStrip{c.Left, c.Right}, nil
	}
	return nil, unsupported(comp, "")
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}
