package templates

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jsonOptions are tojson's arguments, with Python json.dumps's defaults
// as the reference renderer applies them.
type jsonOptions struct {
	indent      int  // 0: one line
	ensureASCII bool // escape non-ASCII as \uXXXX
}

// startItem writes what precedes item i of a list or object at depth:
// Python's json.dumps separates items with ", " when compact and with ","
// plus a newline and indent otherwise.
func startItem(sb *strings.Builder, opt jsonOptions, i, depth int) {
	if i > 0 {
		sb.WriteByte(',')
		if opt.indent == 0 {
			sb.WriteByte(' ')
		}
	}
	newline(sb, opt, depth)
}

func newline(sb *strings.Builder, opt jsonOptions, depth int) {
	if opt.indent == 0 {
		return
	}
	sb.WriteByte('\n')
	for i := 0; i < depth*opt.indent; i++ {
		sb.WriteByte(' ')
	}
}

const hexDigits = "0123456789abcdef"

// writeJSONString writes s as a JSON string the way JSON.stringify and
// json.dumps(ensure_ascii=False) do: quote, backslash and control
// characters escaped, everything else as it is. With ensureASCII every
// UTF-16 code unit above 0x7e is written as \uXXXX.
func writeJSONString(sb *strings.Builder, s string, ensureASCII bool) {
	sb.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x7f {
			i++
			continue
		}
		if c >= 0x7f && !ensureASCII {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				// Invalid UTF-8 cannot come from a JSON body; write the
				// replacement character as a JS string would hold it.
				sb.WriteString(s[start:i])
				sb.WriteString("\ufffd")
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		sb.WriteString(s[start:i])
		switch c {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		default:
			if c < 0x80 {
				writeUnicodeEscape(sb, uint16(c))
				i++
				start = i
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r > 0xffff {
				r -= 0x10000
				writeUnicodeEscape(sb, uint16(0xd800+(r>>10)))
				writeUnicodeEscape(sb, uint16(0xdc00+(r&0x3ff)))
			} else {
				writeUnicodeEscape(sb, uint16(r))
			}
			i += size
			start = i
			continue
		}
		i++
		start = i
	}
	sb.WriteString(s[start:])
	sb.WriteByte('"')
}

func writeUnicodeEscape(sb *strings.Builder, u uint16) {
	sb.WriteString(`\u`)
	sb.WriteByte(hexDigits[u>>12&0xf])
	sb.WriteByte(hexDigits[u>>8&0xf])
	sb.WriteByte(hexDigits[u>>4&0xf])
	sb.WriteByte(hexDigits[u&0xf])
}

// formatNumber writes a float the way JavaScript's Number#toString does,
// which is how the reference renderer prints numbers in JSON.
func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f), math.IsInf(f, 0):
		return "null"
	case f == 0:
		return "0"
	}
	neg := f < 0
	if neg {
		f = -f
	}
	// Shortest round-tripping digits and the decimal exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±XX
	mant, expPart, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expPart)
	k := len(digits)
	n := exp + 1 // position of the decimal point relative to the digits
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		sign := "+"
		if n-1 < 0 {
			sign = "-"
		}
		ex := n - 1
		if ex < 0 {
			ex = -ex
		}
		if k == 1 {
			out = digits + "e" + sign + strconv.Itoa(ex)
		} else {
			out = digits[:1] + "." + digits[1:] + "e" + sign + strconv.Itoa(ex)
		}
	}
	if neg {
		return "-" + out
	}
	return out
}

// writeNativeJSON is writeJSON for the evaluator's own values.
func writeNativeJSON(sb *strings.Builder, v any, opt jsonOptions, depth int, b *budget) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("tojson: value nested deeper than %d levels", maxJSONDepth)
	}
	if err := b.step(); err != nil {
		return err
	}
	if sb.Len() > b.limits.MaxOutputBytes {
		return b.fail(&LimitError{Limit: "output", Detail: fmt.Sprintf("tojson result exceeds %d bytes", b.limits.MaxOutputBytes)})
	}
	switch t := v.(type) {
	case nil, undefined:
		sb.WriteString("null")
	case bool:
		if t {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case int:
		sb.WriteString(strconv.Itoa(t))
	case float64:
		sb.WriteString(formatNumber(t))
	case string:
		writeJSONString(sb, t, opt.ensureASCII)
	case []any:
		if len(t) == 0 {
			sb.WriteString("[]")
			return nil
		}
		sb.WriteByte('[')
		for i, e := range t {
			startItem(sb, opt, i, depth+1)
			if err := writeNativeJSON(sb, e, opt, depth+1, b); err != nil {
				return err
			}
		}
		newline(sb, opt, depth)
		sb.WriteByte(']')
	case *omap:
		return writeNativeObject(sb, t.keys, t.vals, opt, depth, b)
	case *namespace:
		keys := sortedKeys(t.vals)
		vals := make([]any, len(keys))
		for i, k := range keys {
			vals[i] = t.vals[k]
		}
		return writeNativeObject(sb, keys, vals, opt, depth, b)
	default:
		return fmt.Errorf("tojson: cannot serialise a %s", typeName(v))
	}
	return nil
}

func writeNativeObject(sb *strings.Builder, keys []string, vals []any, opt jsonOptions, depth int, b *budget) error {
	if len(keys) == 0 {
		sb.WriteString("{}")
		return nil
	}
	sb.WriteByte('{')
	for i, k := range keys {
		startItem(sb, opt, i, depth+1)
		writeJSONString(sb, k, opt.ensureASCII)
		sb.WriteString(": ")
		if err := writeNativeJSON(sb, vals[i], opt, depth+1, b); err != nil {
			return err
		}
	}
	newline(sb, opt, depth)
	sb.WriteByte('}')
	return nil
}
