package templates

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// methodOf returns obj.name as a bound method when obj's type has one.
func methodOf(obj any, name string) (builtinFunc, bool) {
	switch t := obj.(type) {
	case string:
		m, ok := stringMethodSet[name]
		if !ok {
			return nil, false
		}
		return func(r *run, args []any, kw map[string]any) (any, error) { return m(r, t, args, kw) }, true
	case *omap:
		m, ok := mapMethodSet[name]
		if !ok {
			return nil, false
		}
		return func(r *run, args []any, kw map[string]any) (any, error) { return m(r, t, args) }, true
	}
	return nil, false
}

type strMethod func(r *run, s string, args []any, kw map[string]any) (any, error)

func argString(args []any, i int, fallback string) (string, bool) {
	if i >= len(args) {
		return fallback, true
	}
	switch t := args[i].(type) {
	case string:
		return t, true
	case nil, undefined:
		return fallback, true
	}
	return "", false
}

func stripWith(trim func(string, string) string) strMethod {
	return func(_ *run, s string, args []any, _ map[string]any) (any, error) {
		cut, ok := argString(args, 0, pyWhitespace)
		if !ok {
			return nil, errors.New("strip argument must be a string or None")
		}
		return trim(s, cut), nil
	}
}

// stringMethodSet are the str methods a template may call. Like the other
// tables here it is built once and never changed.
var stringMethodSet = buildStringMethods()

func buildStringMethods() map[string]strMethod {
	return map[string]strMethod{
		"strip":  stripWith(strings.Trim),
		"lstrip": stripWith(strings.TrimLeft),
		"rstrip": stripWith(strings.TrimRight),
		"upper":  func(_ *run, s string, _ []any, _ map[string]any) (any, error) { return strings.ToUpper(s), nil },
		"lower":  func(_ *run, s string, _ []any, _ map[string]any) (any, error) { return strings.ToLower(s), nil },
		"title":  func(_ *run, s string, _ []any, _ map[string]any) (any, error) { return pyTitle(s), nil },
		"capitalize": func(_ *run, s string, _ []any, _ map[string]any) (any, error) {
			return pyCapitalize(s), nil
		},
		"startswith": func(_ *run, s string, args []any, _ map[string]any) (any, error) {
			return affix(s, args, strings.HasPrefix)
		},
		"endswith": func(_ *run, s string, args []any, _ map[string]any) (any, error) {
			return affix(s, args, strings.HasSuffix)
		},
		"split": func(_ *run, s string, args []any, kw map[string]any) (any, error) {
			sep, ok := argString(args, 0, "")
			if !ok {
				return nil, errors.New("split separator must be a string or None")
			}
			limit := -1
			if len(args) > 1 {
				if n, ok := args[1].(int); ok {
					limit = n
				}
			}
			if n, ok := kw["maxsplit"].(int); ok {
				limit = n
			}
			var parts []string
			switch {
			case sep == "" && (len(args) == 0 || args[0] == nil):
				parts = strings.Fields(s)
				if limit >= 0 && len(parts) > limit+1 {
					parts = pyFieldsN(s, limit)
				}
			case sep == "":
				return nil, errors.New("empty separator")
			case limit >= 0:
				parts = strings.SplitN(s, sep, limit+1)
			default:
				parts = strings.Split(s, sep)
			}
			out := make([]any, len(parts))
			for i, p := range parts {
				out[i] = p
			}
			return out, nil
		},
		"splitlines": func(_ *run, s string, _ []any, _ map[string]any) (any, error) {
			lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
			if len(lines) > 0 && lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			out := make([]any, len(lines))
			for i, l := range lines {
				out[i] = l
			}
			return out, nil
		},
		"replace": func(r *run, s string, args []any, _ map[string]any) (any, error) {
			if len(args) < 2 {
				return nil, errors.New("replace takes an old and a new string")
			}
			count := -1
			if len(args) > 2 {
				if n, ok := args[2].(int); ok {
					count = n
				}
			}
			return boundedReplace(r.b, s, toStr(args[0]), toStr(args[1]), count)
		},
		"join": func(r *run, s string, args []any, _ map[string]any) (any, error) {
			if len(args) != 1 {
				return nil, errors.New("join takes one iterable")
			}
			return joinBounded(r, args[0], s, "")
		},
		"find":  findWith(strings.Index),
		"rfind": findWith(strings.LastIndex),
		"count": func(_ *run, s string, args []any, _ map[string]any) (any, error) {
			sub, _ := argString(args, 0, "")
			return strings.Count(s, sub), nil
		},
		"removeprefix": func(_ *run, s string, args []any, _ map[string]any) (any, error) {
			p, _ := argString(args, 0, "")
			return strings.TrimPrefix(s, p), nil
		},
		"removesuffix": func(_ *run, s string, args []any, _ map[string]any) (any, error) {
			p, _ := argString(args, 0, "")
			return strings.TrimSuffix(s, p), nil
		},
		"isdigit": runeCheck(unicode.IsDigit),
		"isspace": runeCheck(unicode.IsSpace),
		"isalpha": runeCheck(unicode.IsLetter),
		"islower": func(_ *run, s string, _ []any, _ map[string]any) (any, error) {
			return strings.ToLower(s) == s && strings.ToUpper(s) != s, nil
		},
		"isupper": func(_ *run, s string, _ []any, _ map[string]any) (any, error) {
			return strings.ToUpper(s) == s && strings.ToLower(s) != s, nil
		},
		"isalnum":   runeCheck(func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }),
		"isdecimal": runeCheck(unicode.IsDigit),
		"isnumeric": runeCheck(unicode.IsNumber),
		"isascii": func(_ *run, s string, _ []any, _ map[string]any) (any, error) {
			return strings.IndexFunc(s, func(c rune) bool { return c > unicode.MaxASCII }) < 0, nil
		},
		"swapcase": func(_ *run, s string, _ []any, _ map[string]any) (any, error) {
			return strings.Map(func(c rune) rune {
				if unicode.IsUpper(c) {
					return unicode.ToLower(c)
				}
				return unicode.ToUpper(c)
			}, s), nil
		},
		"casefold":   func(_ *run, s string, _ []any, _ map[string]any) (any, error) { return strings.ToLower(s), nil },
		"partition":  partition(false),
		"rpartition": partition(true),
	}
}

// findWith is str.find (index is strings.Index) or str.rfind
// (strings.LastIndex): the position of sub in characters, or -1.
func findWith(index func(s, sub string) int) strMethod {
	return func(_ *run, s string, args []any, _ map[string]any) (any, error) {
		sub, _ := argString(args, 0, "")
		i := index(s, sub)
		if i < 0 {
			return -1, nil
		}
		return len([]rune(s[:i])), nil
	}
}

// runeCheck is an is* method: true for a non-empty string whose every
// character passes ok.
func runeCheck(ok func(rune) bool) strMethod {
	return func(_ *run, s string, _ []any, _ map[string]any) (any, error) {
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !ok(c) }) < 0, nil
	}
}

// partition is str.partition, or str.rpartition when fromRight: the text
// before the separator, the separator and the text after it.
func partition(fromRight bool) strMethod {
	return func(_ *run, s string, args []any, _ map[string]any) (any, error) {
		sep, ok := argString(args, 0, "")
		if !ok || sep == "" || len(args) != 1 {
			return nil, errors.New("partition takes one non-empty separator")
		}
		i := strings.Index(s, sep)
		if fromRight {
			i = strings.LastIndex(s, sep)
		}
		switch {
		case i >= 0:
			return []any{s[:i], sep, s[i+len(sep):]}, nil
		case fromRight:
			return []any{"", "", s}, nil
		}
		return []any{s, "", ""}, nil
	}
}

func affix(s string, args []any, has func(string, string) bool) (any, error) {
	if len(args) != 1 {
		return nil, errors.New("startswith/endswith take one argument")
	}
	switch t := args[0].(type) {
	case string:
		return has(s, t), nil
	case []any:
		for _, e := range t {
			if p, ok := e.(string); ok && has(s, p) {
				return true, nil
			}
		}
		return false, nil
	}
	return nil, errors.New("startswith/endswith take a string or a tuple of strings")
}

// pyFieldsN splits on whitespace at most n times, keeping the rest whole.
func pyFieldsN(s string, n int) []string {
	var out []string
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	for len(out) < n && s != "" {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			break
		}
		out = append(out, s[:i])
		s = strings.TrimLeftFunc(s[i:], unicode.IsSpace)
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func pyTitle(s string) string {
	var sb strings.Builder
	prevLetter := false
	for _, c := range s {
		if unicode.IsLetter(c) {
			if prevLetter {
				sb.WriteRune(unicode.ToLower(c))
			} else {
				sb.WriteRune(unicode.ToUpper(c))
			}
			prevLetter = true
		} else {
			sb.WriteRune(c)
			prevLetter = false
		}
	}
	return sb.String()
}

func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r := []rune(strings.ToLower(s))
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

type mapMethod func(r *run, m *omap, args []any) (any, error)

var mapMethodSet = map[string]mapMethod{
	"items": func(r *run, m *omap, _ []any) (any, error) {
		out := make([]any, len(m.keys))
		for i, k := range m.keys {
			out[i] = []any{k, m.vals[i]}
		}
		return out, nil
	},
	"keys": func(_ *run, m *omap, _ []any) (any, error) {
		out := make([]any, len(m.keys))
		for i, k := range m.keys {
			out[i] = k
		}
		return out, nil
	},
	"values": func(_ *run, m *omap, _ []any) (any, error) {
		return append([]any(nil), m.vals...), nil
	},
	"get": func(_ *run, m *omap, args []any) (any, error) {
		if len(args) < 1 || len(args) > 2 {
			return nil, errors.New("get takes a key and an optional default")
		}
		if k, ok := args[0].(string); ok {
			if v, ok := m.get(k); ok {
				return v, nil
			}
		}
		if len(args) == 2 {
			return args[1], nil
		}
		return nil, nil
	},
}

// joinBounded joins the items of seq (optionally their attribute attr).
func joinBounded(r *run, seq any, sep, attr string) (any, error) {
	var items []any
	switch t := seq.(type) {
	case []any:
		items = t
	case string:
		for _, c := range t {
			items = append(items, string(c))
		}
	case *omap:
		for _, k := range t.keys {
			items = append(items, k)
		}
	case undefined:
		return "", nil
	default:
		return nil, fmt.Errorf("can only join an iterable, not %s", typeName(seq))
	}
	var sb strings.Builder
	for i, it := range items {
		if attr != "" {
			it, _ = getAttr(it, attr)
		}
		if i > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(toStr(it))
		if sb.Len() > r.b.limits.MaxOutputBytes {
			return nil, r.b.fail(&LimitError{Limit: "size", Detail: fmt.Sprintf("join result exceeds %d bytes", r.b.limits.MaxOutputBytes)})
		}
	}
	return sb.String(), nil
}

type filterFunc func(r *run, v any, args []any, kw map[string]any) (any, error)

// filterSet are the filters this evaluator implements. The map filter
// reaches it through the run, which keeps the table free of a reference
// to itself.
var filterSet = buildFilters()

func buildFilters() map[string]filterFunc {
	length := func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
		switch t := v.(type) {
		case string:
			return len([]rune(t)), nil
		case []any:
			return len(t), nil
		case *omap:
			return len(t.keys), nil
		case undefined:
			return 0, nil
		}
		return nil, fmt.Errorf("object of type '%s' has no len()", typeName(v))
	}
	str := func(f func(string) string) filterFunc {
		return func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
			s, ok := v.(string)
			if !ok {
				if _, isUndef := v.(undefined); isUndef {
					return "", nil
				}
				return nil, fmt.Errorf("filter needs a string, not %s", typeName(v))
			}
			return f(s), nil
		}
	}
	dflt := func(_ *run, v any, args []any, kw map[string]any) (any, error) {
		var fallback any = ""
		if len(args) > 0 {
			fallback = args[0]
		}
		boolean := false
		if len(args) > 1 {
			boolean = truthy(args[1])
		}
		if b, ok := kw["boolean"]; ok {
			boolean = truthy(b)
		}
		if _, isUndef := v.(undefined); isUndef || (boolean && !truthy(v)) {
			return fallback, nil
		}
		return v, nil
	}
	seqOf := func(v any) ([]any, error) {
		switch t := v.(type) {
		case []any:
			return t, nil
		case string:
			out := []any{}
			for _, c := range t {
				out = append(out, string(c))
			}
			return out, nil
		case *omap:
			out := make([]any, len(t.keys))
			for i, k := range t.keys {
				out[i] = k
			}
			return out, nil
		case undefined:
			return nil, nil
		}
		return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
	}
	selectBy := func(keep bool, byAttr bool) filterFunc {
		return func(r *run, v any, args []any, kw map[string]any) (any, error) {
			items, err := seqOf(v)
			if err != nil {
				return nil, err
			}
			out := []any{}
			for _, it := range items {
				subject := it
				rest := args
				if byAttr {
					if len(args) == 0 {
						return nil, errors.New("selectattr/rejectattr need an attribute name")
					}
					subject, _ = getAttr(it, toStr(args[0]))
					rest = args[1:]
				}
				ok := truthy(subject)
				if len(rest) > 0 {
					name := toStr(rest[0])
					test, found := testSet[name]
					if !found {
						return nil, fmt.Errorf("no test named %q", name)
					}
					ok, err = test(subject, rest[1:])
					if err != nil {
						return nil, err
					}
				}
				if ok == keep {
					out = append(out, it)
				}
			}
			return out, nil
		}
	}
	return map[string]filterFunc{
		"length": length,
		"count":  length,
		"trim": func(_ *run, v any, args []any, _ map[string]any) (any, error) {
			s, ok := v.(string)
			if !ok {
				if _, isUndef := v.(undefined); isUndef {
					return "", nil
				}
				return nil, fmt.Errorf("cannot trim a %s", typeName(v))
			}
			chars, _ := argString(args, 0, pyWhitespace)
			return strings.Trim(s, chars), nil
		},
		"upper":      str(strings.ToUpper),
		"lower":      str(strings.ToLower),
		"title":      str(pyTitle),
		"capitalize": str(pyCapitalize),
		"default":    dflt,
		"d":          dflt,
		"tojson": func(r *run, v any, args []any, kw map[string]any) (any, error) {
			var opt jsonOptions
			if len(args) > 0 {
				return nil, errors.New("tojson takes keyword arguments only")
			}
			for k, a := range kw {
				switch k {
				case "indent":
					if a == nil {
						continue
					}
					n, ok := a.(int)
					if !ok || n < 0 || n > 64 {
						return nil, errors.New("tojson: indent must be an integer from 0 to 64")
					}
					opt.indent = n
				case "ensure_ascii":
					opt.ensureASCII = truthy(a)
				default:
					return nil, fmt.Errorf("tojson: unknown argument %q", k)
				}
			}
			var sb strings.Builder
			if err := writeNativeJSON(&sb, v, opt, 0, r.b); err != nil {
				return nil, err
			}
			return sb.String(), nil
		},
		"items": func(r *run, v any, _ []any, _ map[string]any) (any, error) {
			switch t := v.(type) {
			case *omap:
				return mapMethodSet["items"](r, t, nil)
			case undefined, nil:
				return []any{}, nil
			}
			return nil, errors.New("items requires a mapping")
		},
		"join": func(r *run, v any, args []any, kw map[string]any) (any, error) {
			sep, _ := argString(args, 0, "")
			attr := ""
			if a, ok := kw["attribute"]; ok {
				attr = toStr(a)
			}
			return joinBounded(r, v, sep, attr)
		},
		"replace": func(r *run, v any, args []any, kw map[string]any) (any, error) {
			if len(args) < 2 {
				return nil, errors.New("replace takes an old and a new string")
			}
			count := -1
			if len(args) > 2 {
				if n, ok := args[2].(int); ok {
					count = n
				}
			}
			return boundedReplace(r.b, toStr(v), toStr(args[0]), toStr(args[1]), count)
		},
		"string": func(_ *run, v any, _ []any, _ map[string]any) (any, error) { return toStr(v), nil },
		"list": func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
			items, err := seqOf(v)
			return append([]any{}, items...), err
		},
		"first": func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
			items, err := seqOf(v)
			if err != nil || len(items) == 0 {
				return undefined{}, err
			}
			return items[0], nil
		},
		"last": func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
			items, err := seqOf(v)
			if err != nil || len(items) == 0 {
				return undefined{}, err
			}
			return items[len(items)-1], nil
		},
		"reverse": func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
			if s, ok := v.(string); ok {
				r := []rune(s)
				for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
					r[i], r[j] = r[j], r[i]
				}
				return string(r), nil
			}
			items, err := seqOf(v)
			out := make([]any, len(items))
			for i, it := range items {
				out[len(items)-1-i] = it
			}
			return out, err
		},
		"map": func(r *run, v any, args []any, kw map[string]any) (any, error) {
			items, err := seqOf(v)
			if err != nil {
				return nil, err
			}
			out := make([]any, len(items))
			if a, ok := kw["attribute"]; ok {
				dv, hasDefault := kw["default"]
				for i, it := range items {
					x, _ := getAttr(it, toStr(a))
					if _, isUndef := x.(undefined); isUndef && hasDefault {
						x = dv
					}
					out[i] = x
				}
				return out, nil
			}
			if len(args) == 0 {
				return nil, errors.New("map needs a filter name or attribute=")
			}
			name := toStr(args[0])
			f, ok := r.filters[name]
			if !ok {
				return nil, fmt.Errorf("no filter named %q", name)
			}
			for i, it := range items {
				if out[i], err = f(r, it, args[1:], nil); err != nil {
					return nil, err
				}
			}
			return out, nil
		},
		"select":     selectBy(true, false),
		"reject":     selectBy(false, false),
		"selectattr": selectBy(true, true),
		"rejectattr": selectBy(false, true),
		"int": func(_ *run, v any, args []any, _ map[string]any) (any, error) {
			switch t := v.(type) {
			case int:
				return t, nil
			case float64:
				return int(t), nil
			case bool:
				return int(boolNum(t)), nil
			case string:
				var n int
				if _, err := fmt.Sscan(strings.TrimSpace(t), &n); err == nil {
					return n, nil
				}
			}
			if len(args) > 0 {
				return args[0], nil
			}
			return 0, nil
		},
		"float": func(_ *run, v any, args []any, _ map[string]any) (any, error) {
			if f, ok := number(v); ok {
				return f, nil
			}
			if s, ok := v.(string); ok {
				var f float64
				if _, err := fmt.Sscan(strings.TrimSpace(s), &f); err == nil {
					return f, nil
				}
			}
			if len(args) > 0 {
				return args[0], nil
			}
			return 0.0, nil
		},
		"abs": func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
			switch t := v.(type) {
			case int:
				if t < 0 {
					return -t, nil
				}
				return t, nil
			case float64:
				return math.Abs(t), nil
			}
			return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
		},
		"round": func(_ *run, v any, args []any, _ map[string]any) (any, error) {
			f, ok := number(v)
			if !ok {
				return nil, fmt.Errorf("cannot round a %s", typeName(v))
			}
			prec := 0
			if len(args) > 0 {
				prec, _ = args[0].(int)
			}
			p := math.Pow(10, float64(prec))
			return math.RoundToEven(f*p) / p, nil
		},
		"unique": func(r *run, v any, _ []any, _ map[string]any) (any, error) {
			items, err := seqOf(v)
			out := []any{}
			for _, it := range items {
				// Quadratic: charge the comparisons, so the step bound
				// and the deadline hold on a long list.
				if err := r.b.charge(len(out) + 1); err != nil {
					return nil, err
				}
				dup := false
				for _, o := range out {
					if equal(o, it) {
						dup = true
						break
					}
				}
				if !dup {
					out = append(out, it)
				}
			}
			return out, err
		},
		"sort": func(_ *run, v any, args []any, kw map[string]any) (any, error) {
			items, err := seqOf(v)
			if err != nil {
				return nil, err
			}
			out := append([]any{}, items...)
			attr := ""
			if a, ok := kw["attribute"]; ok {
				attr = toStr(a)
			}
			key := func(x any) any {
				if attr != "" {
					x, _ = getAttr(x, attr)
				}
				return x
			}
			var sortErr error
			sort.SliceStable(out, func(i, j int) bool {
				less, err := compareOp(tokensLess, key(out[i]), key(out[j]))
				if err != nil {
					sortErr = err
					return false
				}
				return less.(bool)
			})
			if truthy(kw["reverse"]) || (len(args) > 0 && truthy(args[0])) {
				for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
					out[i], out[j] = out[j], out[i]
				}
			}
			return out, sortErr
		},
		"indent": func(r *run, v any, args []any, kw map[string]any) (any, error) {
			width := any(4)
			if len(args) > 0 {
				width = args[0]
			} else if w, ok := kw["width"]; ok {
				width = w
			}
			first := len(args) > 1 && truthy(args[1]) || truthy(kw["first"])
			blank := len(args) > 2 && truthy(args[2]) || truthy(kw["blank"])
			pad := ""
			switch w := width.(type) {
			case string:
				pad = w
			case int:
				if w < 0 || w > 256 {
					return nil, errors.New("indent width must be an integer from 0 to 256")
				}
				pad = strings.Repeat(" ", w)
			default:
				return nil, errors.New("indent width must be an integer or a string")
			}
			s := toStr(v)
			lines := strings.Split(s, "\n")
			if len(pad)*len(lines)+len(s) > r.b.limits.MaxOutputBytes {
				return nil, r.b.fail(&LimitError{Limit: "size", Detail: "indent result too large"})
			}
			for i, l := range lines {
				if (i == 0 && !first) || (l == "" && !blank) {
					continue
				}
				lines[i] = pad + l
			}
			return strings.Join(lines, "\n"), nil
		},
		"dictsort": func(_ *run, v any, args []any, kw map[string]any) (any, error) {
			m, ok := v.(*omap)
			if !ok {
				return nil, fmt.Errorf("dictsort needs a mapping, not %s", typeName(v))
			}
			caseSensitive := len(args) > 0 && truthy(args[0]) || truthy(kw["case_sensitive"])
			byValue := len(args) > 1 && toStr(args[1]) == "value" || toStr(kw["by"]) == "value"
			reverse := len(args) > 2 && truthy(args[2]) || truthy(kw["reverse"])
			pairs := make([]any, len(m.keys))
			for i, k := range m.keys {
				pairs[i] = []any{k, m.vals[i]}
			}
			key := func(p any) any {
				kv := p.([]any)
				x := kv[0]
				if byValue {
					x = kv[1]
				}
				if s, ok := x.(string); ok && !caseSensitive {
					return strings.ToLower(s)
				}
				return x
			}
			var sortErr error
			sort.SliceStable(pairs, func(i, j int) bool {
				less, err := compareOp(tokensLess, key(pairs[i]), key(pairs[j]))
				if err != nil {
					sortErr = err
					return false
				}
				return less.(bool)
			})
			if reverse {
				for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
					pairs[i], pairs[j] = pairs[j], pairs[i]
				}
			}
			return pairs, sortErr
		},
		"safe":   func(_ *run, v any, _ []any, _ map[string]any) (any, error) { return v, nil },
		"e":      func(_ *run, v any, _ []any, _ map[string]any) (any, error) { return htmlEscape(toStr(v)), nil },
		"escape": func(_ *run, v any, _ []any, _ map[string]any) (any, error) { return htmlEscape(toStr(v)), nil },
		"wordcount": func(_ *run, v any, _ []any, _ map[string]any) (any, error) {
			return len(strings.Fields(toStr(v))), nil
		},
		"sum": func(r *run, v any, _ []any, kw map[string]any) (any, error) {
			items, err := seqOf(v)
			if err != nil {
				return nil, err
			}
			var total any = 0
			for _, it := range items {
				if a, ok := kw["attribute"]; ok {
					it, _ = getAttr(it, toStr(a))
				}
				if total, err = r.arith(tokens.Addition, total, it); err != nil {
					return nil, err
				}
			}
			return total, nil
		},
		"attr": func(_ *run, v any, args []any, _ map[string]any) (any, error) {
			if len(args) != 1 {
				return nil, errors.New("attr takes one attribute name")
			}
			return getAttr(v, toStr(args[0]))
		},
		"min": extreme(seqOf, false),
		"max": extreme(seqOf, true),
	}
}

// extreme is the min (largest false) or max filter: the first smallest or
// largest item, by attribute= when given, strings compared without case
// unless case_sensitive=true, as Jinja does.
func extreme(seqOf func(any) ([]any, error), largest bool) filterFunc {
	return func(_ *run, v any, _ []any, kw map[string]any) (any, error) {
		items, err := seqOf(v)
		if err != nil || len(items) == 0 {
			return undefined{}, err
		}
		attr, _ := kw["attribute"].(string)
		caseSensitive := truthy(kw["case_sensitive"])
		key := func(x any) any {
			if attr != "" {
				x, _ = getAttr(x, attr)
			}
			if s, ok := x.(string); ok && !caseSensitive {
				return strings.ToLower(s)
			}
			return x
		}
		best, bestKey := items[0], key(items[0])
		for _, it := range items[1:] {
			k := key(it)
			a, b := k, bestKey // min: it < best
			if largest {
				a, b = bestKey, k // max: best < it
			}
			less, err := compareOp(tokensLess, a, b)
			if err != nil {
				return nil, err
			}
			if less.(bool) {
				best, bestKey = it, k
			}
		}
		return best, nil
	}
}

// tokensLess is the operator compareOp uses for sorting.
const tokensLess = tokens.LowerThan

func compareToken(op string) tokens.Type {
	switch op {
	case "<":
		return tokens.LowerThan
	case "<=":
		return tokens.LowerThanOrEqual
	case ">":
		return tokens.GreaterThan
	}
	return tokens.GreaterThanOrEqual
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

type testFunc func(v any, args []any) (bool, error)

// testSet are the "is" tests.
var testSet = buildTests()

func buildTests() map[string]testFunc {
	cmp := func(op string) testFunc {
		return func(v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("test %s takes one argument", op)
			}
			out, err := compareOp(compareToken(op), v, args[0])
			if err != nil {
				return false, err
			}
			return out.(bool), nil
		}
	}
	eq := func(v any, args []any) (bool, error) {
		if len(args) != 1 {
			return false, errors.New("test == takes one argument")
		}
		return equal(v, args[0]), nil
	}
	ne := func(v any, args []any) (bool, error) {
		out, err := eq(v, args)
		return !out, err
	}
	in := func(v any, args []any) (bool, error) {
		if len(args) != 1 {
			return false, errors.New("test in takes one argument")
		}
		return contains(args[0], v)
	}
	is := func(f func(any) bool) testFunc { return func(v any, _ []any) (bool, error) { return f(v), nil } }
	return map[string]testFunc{
		"defined":   is(func(v any) bool { _, u := v.(undefined); return !u }),
		"undefined": is(func(v any) bool { _, u := v.(undefined); return u }),
		"none":      is(func(v any) bool { return v == nil }),
		"string":    is(func(v any) bool { _, ok := v.(string); return ok }),
		"number": is(func(v any) bool {
			_, ok := number(v)
			return ok
		}),
		"integer": is(func(v any) bool { _, ok := v.(int); return ok }),
		"float":   is(func(v any) bool { _, ok := v.(float64); return ok }),
		"boolean": is(func(v any) bool { _, ok := v.(bool); return ok }),
		"true":    is(func(v any) bool { b, ok := v.(bool); return ok && b }),
		"false":   is(func(v any) bool { b, ok := v.(bool); return ok && !b }),
		"mapping": is(func(v any) bool {
			switch v.(type) {
			case *omap, *namespace:
				return true
			}
			return false
		}),
		"iterable": is(func(v any) bool {
			switch v.(type) {
			case string, []any, *omap:
				return true
			}
			return false
		}),
		"sequence": is(func(v any) bool {
			switch v.(type) {
			case string, []any, *omap:
				return true
			}
			return false
		}),
		"callable": is(func(v any) bool {
			switch v.(type) {
			case builtinFunc, *macroValue:
				return true
			}
			return false
		}),
		"lower": is(func(v any) bool { s, ok := v.(string); return ok && strings.ToLower(s) == s }),
		"upper": is(func(v any) bool { s, ok := v.(string); return ok && strings.ToUpper(s) == s }),
		"odd": func(v any, _ []any) (bool, error) {
			n, ok := v.(int)
			return ok && n%2 != 0, nil
		},
		"even": func(v any, _ []any) (bool, error) {
			n, ok := v.(int)
			return ok && n%2 == 0, nil
		},
		"divisibleby": func(v any, args []any) (bool, error) {
			n, ok1 := v.(int)
			d, ok2 := firstArg(args).(int)
			return ok1 && ok2 && d != 0 && n%d == 0, nil
		},
		"eq": eq, "equalto": eq, "==": eq,
		"sameas": func(v any, args []any) (bool, error) {
			// Identity for the singletons it is used with: same type and value.
			if len(args) != 1 {
				return false, errors.New("test sameas takes one argument")
			}
			return typeName(v) == typeName(args[0]) && equal(v, args[0]), nil
		},
		"ne": ne, "!=": ne,
		"lt": cmp("<"), "lessthan": cmp("<"), "<": cmp("<"),
		"le": cmp("<="), "<=": cmp("<="),
		"gt": cmp(">"), "greaterthan": cmp(">"), ">": cmp(">"),
		"ge": cmp(">="), ">=": cmp(">="),
		"in": in,
	}
}

func firstArg(args []any) any {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}

func (r *run) filter(f *nodes.FilterCall, v any, sc *scope) (any, error) {
	fn, ok := r.filters[f.Name]
	if !ok {
		return nil, fmt.Errorf("no filter named %q", f.Name)
	}
	if err := r.b.step(); err != nil {
		return nil, err
	}
	args, err := r.evalList(f.Args, sc)
	if err != nil {
		return nil, err
	}
	var kw map[string]any
	if len(f.Kwargs) > 0 {
		kw = make(map[string]any, len(f.Kwargs))
		for k, e := range f.Kwargs {
			if kw[k], err = r.eval(e, sc); err != nil {
				return nil, err
			}
		}
	}
	out, err := fn(r, v, args, kw)
	if err != nil {
		return nil, err
	}
	if s, ok := out.(string); ok {
		if err := r.b.checkString(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *run) test(n *nodes.TestExpression, sc *scope) (any, error) {
	v, err := r.eval(n.Expression, sc)
	if err != nil {
		return nil, err
	}
	fn, ok := testSet[n.Test.Name]
	if !ok {
		return nil, fmt.Errorf("no test named %q", n.Test.Name)
	}
	args, err := r.evalList(n.Test.Args, sc)
	if err != nil {
		return nil, err
	}
	return fn(v, args)
}

// pyWhitespace is what Python's str.strip() removes without an argument.
const pyWhitespace = " \t\n\r\v\f\x1c\x1d\x1e\x1f\x85\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"

// boundedReplace is str.replace with the result size known before it is
// built.
func boundedReplace(b *budget, s, old, repl string, count int) (string, error) {
	n := strings.Count(s, old)
	if old == "" {
		n = len([]rune(s)) + 1
	}
	if count >= 0 && count < n {
		n = count
	}
	if grow := len(repl) - len(old); grow > 0 && n > 0 && len(s)+n*grow > b.limits.MaxOutputBytes {
		return "", b.fail(&LimitError{Limit: "size", Detail: fmt.Sprintf("replace result exceeds %d bytes", b.limits.MaxOutputBytes)})
	}
	return strings.Replace(s, old, repl, n), nil
}
