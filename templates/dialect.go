package templates

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// The Hugging Face chat-template dialect on top of the engine's Jinja:
// raise_exception, strftime_now, a bounded range, namespace, tojson with
// json.dumps formatting over ordered mappings, ordered items/keys/values,
// and only the filters and methods a sandboxed template needs, each one
// charged to the render's budget.

// Names the sandbox gives its own helpers in the render context. They
// start with a NUL byte, so no template can name them.
const (
	budgetKey = "\x00prism.budget"
	iterName  = "\x00prism.iter"
	mulName   = "\x00prism.mul"
)

// budgetOf returns the render's budget from the evaluation context.
func budgetOf(e *exec.Evaluator) *budget {
	if e != nil && e.Environment != nil && e.Environment.Context != nil {
		if v, ok := e.Environment.Context.Get(budgetKey); ok {
			if b, ok := v.(*budget); ok {
				return b
			}
		}
	}
	// Unreachable in a render the package started; a fresh budget keeps
	// the bounds rather than panicking.
	return &budget{ctx: backgroundContext(), limits: DefaultLimits()}
}

func errValue(err error) *exec.Value { return exec.AsValue(err) }

// globals are the functions every template can call.
func globals() map[string]any {
	return map[string]any{
		"raise_exception": raiseException,
		"strftime_now":    strftimeNow,
		"range":           boundedRange,
		"namespace":       newNamespace,
		iterName:          chargeIteration,
		mulName:           boundedMultiply,
	}
}

// raiseException is the template raising an error on purpose, e.g.
// Gemma's role-alternation check. The render fails with a *TemplateError
// carrying the template's own message.
func raiseException(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
	msg := ""
	if len(args.Args) > 0 {
		msg = args.Args[0].String()
	}
	err := &TemplateError{Phase: "render", Raised: true, Message: msg}
	b := budgetOf(e)
	if b.raised == nil {
		b.raised = err
	}
	return errValue(err)
}

// strftimeNow formats the current local time with Python strftime codes.
func strftimeNow(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
	if len(args.Args) != 1 || !args.Args[0].IsString() {
		return errValue(errors.New("strftime_now takes one format string"))
	}
	b := budgetOf(e)
	if err := b.step(); err != nil {
		return errValue(err)
	}
	return exec.AsValue(strftime(b.now(), args.Args[0].String()))
}

// strftime implements the strftime codes chat templates use.
func strftime(t time.Time, format string) string {
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&sb, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&sb, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&sb, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&sb, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&sb, "%02d", t.Hour())
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&sb, "%02d", h)
		case 'M':
			fmt.Fprintf(&sb, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&sb, "%02d", t.Second())
		case 'p':
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case 'b', 'h':
			sb.WriteString(t.Month().String()[:3])
		case 'B':
			sb.WriteString(t.Month().String())
		case 'a':
			sb.WriteString(t.Weekday().String()[:3])
		case 'A':
			sb.WriteString(t.Weekday().String())
		case 'j':
			fmt.Fprintf(&sb, "%03d", t.YearDay())
		case 'Z':
			name, _ := t.Zone()
			sb.WriteString(name)
		case 'z':
			sb.WriteString(t.Format("-0700"))
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(format[i])
		}
	}
	return sb.String()
}

// boundedRange is range() returning a list no longer than MaxRange.
func boundedRange(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
	ints := make([]int, len(args.Args))
	for i, a := range args.Args {
		if !a.IsInteger() {
			return errValue(fmt.Errorf("range() argument %d is not an integer", i+1))
		}
		ints[i] = a.Integer()
	}
	start, step, n, err := budgetOf(e).rangeOf(ints)
	if err != nil {
		return errValue(err)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return exec.AsValue(out)
}

// newNamespace is namespace(key=value, ...): a mutable attribute bag.
func newNamespace(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
	ns := make(map[string]any, len(args.KwArgs))
	for k, v := range args.KwArgs {
		ns[k] = v.Interface()
	}
	return exec.AsValue(ns)
}

// chargeIteration wraps every for-loop's iterable: the loop's length is
// charged to the budget before it runs, so nested loops cannot multiply
// into unbounded work.
func chargeIteration(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
	if len(args.Args) != 1 {
		return errValue(errors.New("internal: iteration guard takes one argument"))
	}
	v := args.Args[0]
	b := budgetOf(e)
	n := 1
	if v.IsList() || v.IsDict() || v.IsString() {
		n += v.Len()
	}
	if err := b.charge(n); err != nil {
		return errValue(err)
	}
	return v
}

// boundedMultiply is the * operator with the result size checked before
// a string is repeated.
func boundedMultiply(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
	if len(args.Args) != 2 {
		return errValue(errors.New("internal: multiply guard takes two arguments"))
	}
	l, r := args.Args[0], args.Args[1]
	b := budgetOf(e)
	if err := b.step(); err != nil {
		return errValue(err)
	}
	switch {
	case l.IsFloat() || r.IsFloat():
		return exec.AsValue(l.Float() * r.Float())
	case l.IsString() || r.IsString():
		s, n := l, r
		if r.IsString() {
			s, n = r, l
		}
		if !n.IsInteger() {
			return errValue(fmt.Errorf("can't multiply a string by %s", n.String()))
		}
		count := n.Integer()
		if count <= 0 {
			return exec.AsValue("")
		}
		str := s.String()
		if len(str) > 0 && count > b.limits.MaxOutputBytes/len(str) {
			return errValue(b.fail(&LimitError{Limit: "size", Detail: fmt.Sprintf("repeating a %d-byte string %d times exceeds %d bytes", len(str), count, b.limits.MaxOutputBytes)}))
		}
		return exec.AsValue(strings.Repeat(str, count))
	case l.IsInteger() && r.IsInteger():
		return exec.AsValue(l.Integer() * r.Integer())
	}
	return errValue(fmt.Errorf("unsupported operands for *: %s and %s", l.String(), r.String()))
}

// filterNames are the engine's filters a template may use; the ones left
// out can build unbounded strings from a small argument (center, format,
// wordwrap), allocate by a count argument (batch, slice), take quadratic
// time unseen (unique) or are not deterministic (random).
var filterNames = []string{
	"abs", "attr", "capitalize", "default", "d", "dictsort", "e", "escape",
	"first", "float", "forceescape", "groupby", "int", "last", "length", "count", "list",
	"lower", "map", "max", "min", "reject", "rejectattr", "reverse", "round", "safe",
	"select", "selectattr", "sort", "string", "striptags", "sum", "title", "trim",
	"truncate", "upper", "urlencode", "wordcount",
}

// filters builds the filter set: the engine's allowed filters plus ours,
// each charged to the budget and its string result size-checked.
func filters() *exec.FilterSet {
	m := make(map[string]exec.FilterFunction, len(filterNames)+8)
	for _, name := range filterNames {
		if f, ok := builtins.Filters.Get(name); ok {
			m[name] = guardFilter(f)
		}
	}
	m["tojson"] = guardFilter(filterToJSON)
	m["items"] = guardFilter(filterItems)
	m["join"] = guardFilter(filterJoin)
	m["replace"] = guardFilter(filterReplace)
	m["indent"] = guardFilter(filterIndent)
	return exec.NewFilterSet(m)
}

func guardFilter(f exec.FilterFunction) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		b := budgetOf(e)
		if err := b.step(); err != nil {
			return errValue(err)
		}
		out := f(e, in, params)
		if out != nil && out.IsString() {
			if err := b.checkString(out.String()); err != nil {
				return errValue(err)
			}
		}
		return out
	}
}

// filterToJSON is tojson with json.dumps formatting: ", " and ": "
// separators, the mapping's own key order, non-ASCII kept unless
// ensure_ascii=true, and indent=N for pretty output.
func filterToJSON(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	var opt jsonOptions
	for k, v := range params.KwArgs {
		switch k {
		case "indent":
			if v.IsNil() {
				continue
			}
			if !v.IsInteger() || v.Integer() < 0 || v.Integer() > 64 {
				return errValue(errors.New("tojson: indent must be an integer from 0 to 64"))
			}
			opt.indent = v.Integer()
		case "ensure_ascii":
			opt.ensureASCII = v.IsTrue()
		default:
			return errValue(fmt.Errorf("tojson: unknown argument %q", k))
		}
	}
	if len(params.Args) > 0 {
		return errValue(errors.New("tojson takes keyword arguments only"))
	}
	var sb strings.Builder
	if err := writeJSON(&sb, in, opt, 0, budgetOf(e)); err != nil {
		return errValue(err)
	}
	return exec.AsSafeValue(sb.String())
}

// filterItems is items in the mapping's own order.
func filterItems(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	items, err := orderedItems(in)
	if err != nil {
		return errValue(err)
	}
	return exec.AsValue(items)
}

// orderedItems lists a mapping's (key, value) pairs in its own order.
func orderedItems(in *exec.Value) ([]any, error) {
	if d, ok := asDict(in); ok {
		out := make([]any, len(d.Pairs))
		for i, p := range d.Pairs {
			out[i] = []any{p.Key, p.Value}
		}
		return out, nil
	}
	if !in.IsDict() {
		return nil, errors.New("items requires a mapping")
	}
	keys := in.Keys()
	out := make([]any, len(keys))
	for i, k := range keys {
		v, _ := in.GetItem(k.Interface())
		out[i] = []any{k, v}
	}
	return out, nil
}

// asDict returns the ordered mapping inside v, if it is one.
func asDict(v *exec.Value) (exec.Dict, bool) {
	rv := v.Val
	for rv.IsValid() && (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) {
		if rv.IsNil() {
			return exec.Dict{}, false
		}
		rv = rv.Elem()
	}
	if rv.IsValid() && rv.Type() == exec.TypeDict {
		return rv.Interface().(exec.Dict), true
	}
	return exec.Dict{}, false
}

// filterJoin is join(sep="", attribute=None) with the result size known
// before it is built.
func filterJoin(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	sep := ""
	if len(params.Args) > 0 {
		sep = params.Args[0].String()
	}
	attr := params.GetKeywordArgument("attribute", nil)
	if !in.IsList() {
		if in.IsString() {
			return in
		}
		return errValue(errors.New("join requires a list"))
	}
	b := budgetOf(e)
	parts := make([]string, 0, in.Len())
	total := 0
	var failed error
	in.Iterate(func(_, _ int, item, _ *exec.Value) bool {
		if !attr.IsNil() {
			item, _ = item.Get(attr.String())
		}
		s := item.String()
		total += len(s) + len(sep)
		if total > b.limits.MaxOutputBytes {
			failed = b.fail(&LimitError{Limit: "size", Detail: fmt.Sprintf("join result exceeds %d bytes", b.limits.MaxOutputBytes)})
			return false
		}
		parts = append(parts, s)
		return true
	}, func() {})
	if failed != nil {
		return errValue(failed)
	}
	return exec.AsValue(strings.Join(parts, sep))
}

// filterReplace is replace(old, new, count=None) with the result size
// known before it is built.
func filterReplace(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if len(params.Args) < 2 {
		return errValue(errors.New("replace takes an old and a new string"))
	}
	count := -1
	if len(params.Args) > 2 && params.Args[2].IsInteger() {
		count = params.Args[2].Integer()
	} else if c, ok := params.KwArgs["count"]; ok && c.IsInteger() {
		count = c.Integer()
	}
	out, err := boundedReplace(budgetOf(e), in.String(), params.Args[0].String(), params.Args[1].String(), count)
	if err != nil {
		return errValue(err)
	}
	return exec.AsValue(out)
}

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

// filterIndent is indent(width=4, first=False, blank=False).
func filterIndent(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	width := params.GetKeywordArgument("width", 4)
	first := params.GetKeywordArgument("first", false)
	blank := params.GetKeywordArgument("blank", false)
	if len(params.Args) > 0 {
		width = params.Args[0]
	}
	if len(params.Args) > 1 {
		first = params.Args[1]
	}
	if len(params.Args) > 2 {
		blank = params.Args[2]
	}
	pad := ""
	if width.IsString() {
		pad = width.String()
	} else {
		if !width.IsInteger() || width.Integer() < 0 || width.Integer() > 256 {
			return errValue(errors.New("indent width must be an integer from 0 to 256"))
		}
		pad = strings.Repeat(" ", width.Integer())
	}
	lines := strings.Split(in.String(), "\n")
	b := budgetOf(e)
	if len(pad)*len(lines)+len(in.String()) > b.limits.MaxOutputBytes {
		return errValue(b.fail(&LimitError{Limit: "size", Detail: "indent result too large"}))
	}
	for i, l := range lines {
		if i == 0 && !first.IsTrue() {
			continue
		}
		if l == "" && !blank.IsTrue() {
			continue
		}
		lines[i] = pad + l
	}
	return exec.AsValue(strings.Join(lines, "\n"))
}

// stringMethods are the str methods a template may call.
var stringMethods = []string{
	"capitalize", "casefold", "count", "endswith", "find", "isalnum", "isalpha", "isascii",
	"isdecimal", "isdigit", "islower", "isnumeric", "isspace", "istitle", "isupper", "lower",
	"partition", "removeprefix", "removesuffix", "rfind", "rpartition", "rsplit",
	"split", "splitlines", "startswith", "swapcase", "title", "upper",
}

// pyWhitespace is what Python's str.strip() removes without an argument.
const pyWhitespace = " \t\n\r\v\f\x1c\x1d\x1e\x1f\x85\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"

// stripMethod is str.strip/lstrip/rstrip with Python's semantics: no
// argument (or None) strips whitespace, a string strips those characters.
func stripMethod(trim func(string, string) string) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		cutset := pyWhitespace
		switch {
		case len(args.Args) > 1:
			return nil, errors.New("strip takes at most one argument")
		case len(args.Args) == 1 && !args.Args[0].IsNil():
			if !args.Args[0].IsString() {
				return nil, errors.New("strip argument must be a string or None")
			}
			cutset = args.Args[0].String()
		}
		return trim(self, cutset), nil
	}
}

// methods builds the method sets: safe str methods, ordered read-only
// mapping methods, no list methods (lists are immutable in the sandbox).
func methods() exec.Methods {
	base := builtins.Methods
	str := make(map[string]exec.Method[string], len(stringMethods)+2)
	for _, name := range stringMethods {
		if m, ok := base.Str.Get(name); ok {
			str[name] = m
		}
	}
	str["strip"] = stripMethod(strings.Trim)
	str["lstrip"] = stripMethod(strings.TrimLeft)
	str["rstrip"] = stripMethod(strings.TrimRight)
	str["replace"] = func(self string, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) < 2 {
			return nil, errors.New("replace takes an old and a new string")
		}
		count := -1
		if len(args.Args) > 2 && args.Args[2].IsInteger() {
			count = args.Args[2].Integer()
		}
		// The method has no evaluator; a fixed cap keeps it bounded.
		b := &budget{limits: DefaultLimits(), ctx: backgroundContext()}
		return boundedReplace(b, self, args.Args[0].String(), args.Args[1].String(), count)
	}
	str["join"] = func(self string, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) != 1 || !args.Args[0].IsList() {
			return nil, errors.New("join takes one list")
		}
		var parts []string
		total := 0
		var err error
		args.Args[0].Iterate(func(_, _ int, item, _ *exec.Value) bool {
			s := item.String()
			total += len(s) + len(self)
			if total > DefaultLimits().MaxOutputBytes {
				err = &LimitError{Limit: "size", Detail: "join result too large"}
				return false
			}
			parts = append(parts, s)
			return true
		}, func() {})
		if err != nil {
			return nil, err
		}
		return strings.Join(parts, self), nil
	}
	dict := map[string]exec.Method[map[string]any]{
		"items": func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
			return orderedItems(self)
		},
		"keys": func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
			items, err := orderedItems(self)
			for i, it := range items {
				items[i] = it.([]any)[0]
			}
			return items, err
		},
		"values": func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
			items, err := orderedItems(self)
			for i, it := range items {
				items[i] = it.([]any)[1]
			}
			return items, err
		},
		"get": func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
			if len(args.Args) < 1 || len(args.Args) > 2 {
				return nil, errors.New("get takes a key and an optional default")
			}
			// A *exec.Value result would read as an error; hand back the
			// plain value.
			if v, ok := self.GetItem(args.Args[0].Interface()); ok {
				return v.Interface(), nil
			}
			if len(args.Args) == 2 {
				return args.Args[1].Interface(), nil
			}
			return nil, nil
		},
	}
	return exec.Methods{
		Bool:  base.Bool,
		Int:   base.Int,
		Float: base.Float,
		Str:   exec.NewMethodSet(str),
		Dict:  exec.NewMethodSet(dict),
		List:  exec.NewMethodSet(map[string]exec.Method[[]any]{}),
	}
}
