package templates

import (
	"math"
	"strconv"
	"strings"
)

// Values of Prism's evaluator: nil (None), undefined, bool, int, float64,
// string, []any (list or tuple), *omap (mapping in key order),
// *namespace, *loopInfo, *macroValue and builtin functions.

// undefined is a name or key that does not exist. It prints as "", is
// false, and is not none.
type undefined struct{}

// omap is a mapping that keeps insertion order: the caller's JSON objects
// and the template's dict literals.
type omap struct {
	keys []string
	vals []any
}

func newOmap(n int) *omap { return &omap{keys: make([]string, 0, n), vals: make([]any, 0, n)} }

func (m *omap) get(k string) (any, bool) {
	for i, key := range m.keys {
		if key == k {
			return m.vals[i], true
		}
	}
	return nil, false
}

// put sets k, keeping the first position of a repeated key.
func (m *omap) put(k string, v any) {
	for i, key := range m.keys {
		if key == k {
			m.vals[i] = v
			return
		}
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
}

// namespace is namespace(...): the one mutable object a template has.
type namespace struct{ vals map[string]any }

func truthy(v any) bool {
	switch t := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return t
	case int:
		return t != 0
	case float64:
		return t != 0
	case string:
		return t != ""
	case []any:
		return len(t) > 0
	case *omap:
		return len(t.keys) > 0
	}
	return true
}

// toStr is str(v) as Jinja prints it.
func toStr(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return "None"
	case undefined:
		return ""
	case bool:
		if t {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(t)
	case float64:
		return pyFloat(t)
	}
	var sb strings.Builder
	writeRepr(&sb, v, 0)
	return sb.String()
}

// pyFloat formats a float as Python's repr does.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e16) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

// writeRepr writes v the way Python's repr prints lists and dicts.
func writeRepr(sb *strings.Builder, v any, depth int) {
	if depth > maxJSONDepth {
		sb.WriteString("...")
		return
	}
	switch t := v.(type) {
	case string:
		q := "'"
		if strings.Contains(t, "'") && !strings.Contains(t, `"`) {
			q = `"`
		}
		sb.WriteString(q)
		r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`, q, `\`+q)
		sb.WriteString(r.Replace(t))
		sb.WriteString(q)
	case []any:
		sb.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeRepr(sb, e, depth+1)
		}
		sb.WriteByte(']')
	case *omap:
		sb.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeRepr(sb, k, depth+1)
			sb.WriteString(": ")
			writeRepr(sb, t.vals[i], depth+1)
		}
		sb.WriteByte('}')
	case *namespace:
		sb.WriteString("<Namespace>")
	case *loopInfo:
		sb.WriteString("<LoopContext>")
	case *macroValue, builtinFunc:
		sb.WriteString("<function>")
	default:
		sb.WriteString(toStr(v))
	}
}

// equal is Python ==.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case bool:
		y, ok := b.(bool)
		if ok {
			return x == y
		}
		if n, ok := number(b); ok {
			return boolNum(x) == n
		}
		return false
	case int, float64:
		xf, _ := number(a)
		if y, ok := b.(bool); ok {
			return xf == boolNum(y)
		}
		if yf, ok := number(b); ok {
			if xi, ok := a.(int); ok {
				if yi, ok := b.(int); ok {
					return xi == yi
				}
			}
			return xf == yf
		}
		return false
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *omap:
		y, ok := b.(*omap)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		for i, k := range x.keys {
			yv, ok := y.get(k)
			if !ok || !equal(x.vals[i], yv) {
				return false
			}
		}
		return true
	}
	return a == b
}

func boolNum(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// number reads an int or float as float64.
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case undefined:
		return "Undefined"
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case *omap:
		return "dict"
	case *namespace:
		return "Namespace"
	}
	return "object"
}
