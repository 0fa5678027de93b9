package templates

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Prism evaluates the tree gonja parses with an evaluator of its own, the
// only renderer: plain Go values instead of reflection, one scope map per
// frame, and every bound of the sandbox checked where the work happens.
// A template that uses a construct it does not cover is refused when it
// is loaded (see check).

// builtinFunc is a function a template can call.
type builtinFunc func(r *run, args []any, kw map[string]any) (any, error)

// macroValue is a macro, or the caller() of a call block.
type macroValue struct {
	node    *nodes.Macro
	body    *nodes.Wrapper // caller() body
	closure *scope
}

// loopInfo is the loop variable.
type loopInfo struct {
	index0  int
	items   []any
	depth   int
	recurse func(seq any) (any, error) // loop(...) in a recursive loop
}

// scope is one frame of variables.
type scope struct {
	vars   map[string]any
	parent *scope
}

func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

var (
	errBreak    = errors.New("break outside a loop")
	errContinue = errors.New("continue outside a loop")
)

// run is one render.
type run struct {
	b       *budget
	out     *output
	filters map[string]filterFunc
}

// sub is a run writing into its own buffer (macro bodies, block sets).
func (r *run) sub() *run {
	return &run{b: r.b, out: &output{sb: &strings.Builder{}, b: r.b}, filters: r.filters}
}

func (r *run) execAll(ns []nodes.Node, sc *scope) error {
	for _, n := range ns {
		if err := r.exec(n, sc); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) write(s string) error {
	_, err := r.out.WriteString(s)
	return err
}

func (r *run) exec(n nodes.Node, sc *scope) error {
	switch n := n.(type) {
	case *nodes.Data:
		return r.write(dataText(n))
	case *nodes.Comment:
		return nil
	case *nodes.Output:
		var v any
		var err error
		if n.Condition != nil {
			c, err := r.eval(n.Condition, sc)
			if err != nil {
				return err
			}
			switch {
			case truthy(c):
				v, err = r.eval(n.Expression, sc)
			case n.Alternative != nil:
				v, err = r.eval(n.Alternative, sc)
			default:
				return nil
			}
			if err != nil {
				return err
			}
		} else if v, err = r.eval(n.Expression, sc); err != nil {
			return err
		}
		if s, ok := v.(string); ok {
			return r.write(s)
		}
		return r.write(toStr(v))
	case *nodes.ControlStructureBlock:
		return r.statement(n.ControlStructure, sc)
	case *nodes.Wrapper:
		return r.execAll(n.Nodes, sc)
	}
	return fmt.Errorf("unsupported template node %T", n)
}

// dataText is a text node with its whitespace control applied.
func dataText(n *nodes.Data) string {
	s := n.Data.Val
	if n.RemoveFirstLineReturn {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "\r\n"), "\n")
	}
	if n.Trim.Left {
		s = strings.TrimLeft(s, " \r\n\t")
	}
	if n.Trim.Right {
		s = strings.TrimRight(s, " \r\n\t")
	}
	if n.RemoveTrailingWhiteSpaceFromLastLine {
		i := strings.LastIndexByte(s, '\n') + 1
		s = s[:i] + strings.TrimRight(s[i:], " \n\t\r")
	}
	return s
}

func (r *run) statement(cs nodes.ControlStructure, sc *scope) error {
	switch cs := cs.(type) {
	case *controlStructures.IfControlStructure:
		for i, cond := range cs.Conditions {
			c, err := r.eval(cond, sc)
			if err != nil {
				return err
			}
			if truthy(c) {
				return r.execAll(cs.Wrappers[i].Nodes, sc)
			}
		}
		if len(cs.Wrappers) > len(cs.Conditions) {
			return r.execAll(cs.Wrappers[len(cs.Conditions)].Nodes, sc)
		}
		return nil
	case *controlStructures.ForControlStructure:
		return r.forLoop(cs, sc)
	case *setStatement:
		return r.set(cs, sc)
	case *controlStructures.MacroControlStructure:
		sc.vars[cs.Name] = &macroValue{node: cs.Macro, closure: sc}
		return nil
	case *rawStatement:
		return r.write(cs.data.Data.Val)
	case *controlStructures.CallControlStructure:
		caller := &macroValue{body: cs.Body, closure: sc}
		out, err := r.call(cs.Call, sc, caller)
		if err != nil {
			return err
		}
		return r.write(toStr(out))
	case *controlStructures.BreakControlStructure:
		return errBreak
	case *controlStructures.ContinueControlStructure:
		return errContinue
	}
	return fmt.Errorf("unsupported statement %T", cs)
}

func (r *run) forLoop(cs *controlStructures.ForControlStructure, sc *scope) error {
	seq, err := r.eval(cs.ObjectEvaluator, sc)
	if err != nil {
		return err
	}
	depth := 1
	if outer, ok := sc.lookup("loop"); ok {
		if l, ok := outer.(*loopInfo); ok {
			depth = l.depth + 1
		}
	}
	return r.iterate(cs, seq, sc, depth)
}

// iterate runs a for loop's body over seq; a recursive loop calls it again
// through loop(...).
func (r *run) iterate(cs *controlStructures.ForControlStructure, seq any, sc *scope, depth int) error {
	var items []any
	var values []any // for "for k, v in mapping"
	switch t := seq.(type) {
	case []any:
		items = t
	case *omap:
		items = make([]any, len(t.keys))
		for i, k := range t.keys {
			items[i] = k
		}
		if cs.Value != "" {
			values = t.vals
		}
	case string:
		for _, c := range t {
			items = append(items, string(c))
		}
	case undefined:
	default:
		return fmt.Errorf("'%s' object is not iterable", typeName(seq))
	}
	if err := r.b.charge(len(items) + 1); err != nil {
		return err
	}
	frame := &scope{vars: make(map[string]any, 4), parent: sc}
	bind := func(i int) error {
		if cs.Value == "" {
			frame.vars[cs.Key] = items[i]
			return nil
		}
		if values != nil {
			frame.vars[cs.Key], frame.vars[cs.Value] = items[i], values[i]
			return nil
		}
		pair, ok := items[i].([]any)
		if !ok || len(pair) != 2 {
			return fmt.Errorf("cannot unpack %s into two loop variables", typeName(items[i]))
		}
		frame.vars[cs.Key], frame.vars[cs.Value] = pair[0], pair[1]
		return nil
	}
	if cs.IfCondition != nil {
		var kept, keptVals []any
		for i := range items {
			if err := bind(i); err != nil {
				return err
			}
			c, err := r.eval(cs.IfCondition, frame)
			if err != nil {
				return err
			}
			if truthy(c) {
				kept = append(kept, items[i])
				if values != nil {
					keptVals = append(keptVals, values[i])
				}
			}
		}
		items, values = kept, keptVals
	}
	if len(items) == 0 {
		if cs.EmptyWrapper != nil {
			return r.execAll(cs.EmptyWrapper.Nodes, sc)
		}
		return nil
	}
	loop := &loopInfo{items: items, depth: depth}
	if cs.Recursive {
		loop.recurse = func(seq any) (any, error) {
			b := r.b
			if b.depth >= b.limits.MaxCallDepth {
				return nil, b.fail(&LimitError{Limit: "calls", Detail: fmt.Sprintf("recursive loop nested deeper than %d", b.limits.MaxCallDepth)})
			}
			b.depth++
			defer func() { b.depth-- }()
			sub := r.sub()
			if err := sub.iterate(cs, seq, sc, depth+1); err != nil {
				return nil, err
			}
			return sub.out.sb.String(), nil
		}
	}
	for i := range items {
		clear(frame.vars)
		if err := bind(i); err != nil {
			return err
		}
		loop.index0 = i
		frame.vars["loop"] = loop
		err := r.execAll(cs.BodyWrapper.Nodes, frame)
		switch {
		case err == errBreak:
			return nil
		case err == errContinue, err == nil:
		default:
			return err
		}
	}
	return nil
}

func (r *run) set(s *setStatement, sc *scope) error {
	if err := r.b.step(); err != nil {
		return err
	}
	var v any
	var err error
	switch {
	case s.body != nil:
		sub := r.sub()
		if err := sub.execAll(s.body.Nodes, sc); err != nil {
			return err
		}
		v = sub.out.sb.String()
	case s.condition != nil:
		c, err := r.eval(s.condition, sc)
		if err != nil {
			return err
		}
		if truthy(c) {
			v, err = r.eval(s.expression, sc)
		} else {
			v, err = r.eval(s.alternative, sc)
		}
		if err != nil {
			return err
		}
	default:
		if v, err = r.eval(s.expression, sc); err != nil {
			return err
		}
	}
	if str, ok := v.(string); ok {
		if err := r.b.checkString(str); err != nil {
			return err
		}
	}
	switch t := s.target.(type) {
	case *nodes.Name:
		sc.vars[t.Name.Val] = v
		return nil
	case *nodes.GetAttribute:
		obj, err := r.eval(t.Node, sc)
		if err != nil {
			return err
		}
		ns, ok := obj.(*namespace)
		if !ok {
			return fmt.Errorf("cannot assign attribute %s on a %s: only a namespace is mutable", t.Attribute, typeName(obj))
		}
		ns.vals[t.Attribute] = v
		return nil
	}
	return fmt.Errorf("cannot assign to %s", s.target)
}

// eval evaluates an expression.
func (r *run) eval(e nodes.Expression, sc *scope) (any, error) {
	switch n := e.(type) {
	case *nodes.String:
		return n.Val, nil
	case *nodes.Integer:
		return n.Val, nil
	case *nodes.Float:
		return n.Val, nil
	case *nodes.Bool:
		return n.Val, nil
	case *nodes.None:
		return nil, nil
	case *nodes.Name:
		if v, ok := sc.lookup(n.Name.Val); ok {
			return v, nil
		}
		return undefined{}, nil
	case *nodes.List:
		return r.evalList(n.Val, sc)
	case *nodes.Tuple:
		return r.evalList(n.Val, sc)
	case *nodes.Dict:
		m := newOmap(len(n.Pairs))
		for _, p := range n.Pairs {
			k, err := r.eval(p.Key, sc)
			if err != nil {
				return nil, err
			}
			v, err := r.eval(p.Value, sc)
			if err != nil {
				return nil, err
			}
			m.put(toStr(k), v)
		}
		return m, nil
	case *nodes.GetAttribute:
		obj, err := r.eval(n.Node, sc)
		if err != nil {
			return nil, err
		}
		if n.Attribute == "" {
			return getItem(obj, n.Index)
		}
		return getAttr(obj, n.Attribute)
	case *nodes.GetItem:
		obj, err := r.eval(n.Node, sc)
		if err != nil {
			return nil, err
		}
		key, err := r.eval(n.Arg, sc)
		if err != nil {
			return nil, err
		}
		return getItem(obj, key)
	case *nodes.GetSlice:
		return r.slice(n, sc)
	case *nodes.Call:
		return r.call(n, sc, nil)
	case *nodes.Negation:
		v, err := r.eval(n.Term, sc)
		if err != nil {
			return nil, err
		}
		return !truthy(v), nil
	case *nodes.UnaryExpression:
		v, err := r.eval(n.Term, sc)
		if err != nil {
			return nil, err
		}
		if !n.Negative {
			return v, nil
		}
		switch t := v.(type) {
		case int:
			return -t, nil
		case float64:
			return -t, nil
		}
		return nil, fmt.Errorf("bad operand type for unary -: '%s'", typeName(v))
	case *nodes.BinaryExpression:
		return r.binary(n, sc)
	case *nodes.FilteredExpression:
		v, err := r.eval(n.Expression, sc)
		if err != nil {
			return nil, err
		}
		for _, f := range n.Filters {
			if v, err = r.filter(f, v, sc); err != nil {
				return nil, err
			}
		}
		return v, nil
	case *nodes.TestExpression:
		return r.test(n, sc)
	case *nodes.Error:
		return nil, n.Error
	}
	return nil, fmt.Errorf("unsupported expression %T", e)
}

func (r *run) evalList(es []nodes.Expression, sc *scope) ([]any, error) {
	out := make([]any, len(es))
	for i, e := range es {
		v, err := r.eval(e, sc)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func getAttr(obj any, name string) (any, error) {
	switch t := obj.(type) {
	case *omap:
		if v, ok := t.get(name); ok {
			return v, nil
		}
	case *namespace:
		if v, ok := t.vals[name]; ok {
			return v, nil
		}
	case *loopInfo:
		return t.attr(name), nil
	}
	// Like Jinja's getattr: a missing attribute, on None too, is undefined.
	return undefined{}, nil
}

func getItem(obj, key any) (any, error) {
	switch t := obj.(type) {
	case []any:
		i, ok := key.(int)
		if !ok {
			return undefined{}, nil
		}
		if i < 0 {
			i += len(t)
		}
		if i < 0 || i >= len(t) {
			return undefined{}, nil
		}
		return t[i], nil
	case string:
		i, ok := key.(int)
		if !ok {
			return undefined{}, nil
		}
		runes := []rune(t)
		if i < 0 {
			i += len(runes)
		}
		if i < 0 || i >= len(runes) {
			return undefined{}, nil
		}
		return string(runes[i]), nil
	case *omap:
		if k, ok := key.(string); ok {
			if v, ok := t.get(k); ok {
				return v, nil
			}
		}
	case *namespace:
		if k, ok := key.(string); ok {
			if v, ok := t.vals[k]; ok {
				return v, nil
			}
		}
	case *loopInfo:
		if k, ok := key.(string); ok {
			return t.attr(k), nil
		}
	}
	return undefined{}, nil
}

func (l *loopInfo) attr(name string) any {
	n := len(l.items)
	switch name {
	case "index":
		return l.index0 + 1
	case "index0":
		return l.index0
	case "revindex":
		return n - l.index0
	case "revindex0":
		return n - l.index0 - 1
	case "first":
		return l.index0 == 0
	case "last":
		return l.index0 == n-1
	case "length":
		return n
	case "depth":
		return l.depth
	case "depth0":
		return l.depth - 1
	case "previtem":
		if l.index0 > 0 {
			return l.items[l.index0-1]
		}
	case "nextitem":
		if l.index0+1 < n {
			return l.items[l.index0+1]
		}
	case "cycle":
		return builtinFunc(func(_ *run, args []any, _ map[string]any) (any, error) {
			if len(args) == 0 {
				return nil, errors.New("cycle needs at least one value")
			}
			return args[l.index0%len(args)], nil
		})
	}
	return undefined{}
}

func (r *run) slice(n *nodes.GetSlice, sc *scope) (any, error) {
	obj, err := r.eval(n.Node, sc)
	if err != nil {
		return nil, err
	}
	bound := func(e nodes.Node) (int, bool, error) {
		if e == nil {
			return 0, false, nil
		}
		v, err := r.eval(e, sc)
		if err != nil {
			return 0, false, err
		}
		switch t := v.(type) {
		case nil, undefined:
			return 0, false, nil
		case int:
			return t, true, nil
		}
		return 0, false, fmt.Errorf("slice indices must be integers or None")
	}
	start, hasStart, err := bound(n.Start)
	if err != nil {
		return nil, err
	}
	stop, hasStop, err := bound(n.End)
	if err != nil {
		return nil, err
	}
	step, hasStep, err := bound(n.Step)
	if err != nil {
		return nil, err
	}
	if !hasStep {
		step = 1
	}
	if step == 0 {
		return nil, errors.New("slice step cannot be zero")
	}
	pick := func(length int) []int {
		lo, hi := sliceBounds(length, start, stop, step, hasStart, hasStop)
		// Count first, so a huge step cannot overflow the index.
		var idx []int
		if step > 0 && hi > lo {
			for k := 0; k <= (hi-lo-1)/step; k++ {
				idx = append(idx, lo+k*step)
			}
		} else if step < 0 && lo > hi {
			by := uint64(-step) // -MinInt64 wraps to its own magnitude
			for k := uint64(0); k <= uint64(lo-hi-1)/by; k++ {
				idx = append(idx, lo-int(k*by))
			}
		}
		return idx
	}
	switch t := obj.(type) {
	case []any:
		idx := pick(len(t))
		out := make([]any, len(idx))
		for i, j := range idx {
			out[i] = t[j]
		}
		return out, nil
	case string:
		runes := []rune(t)
		idx := pick(len(runes))
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = runes[j]
		}
		return string(out), nil
	}
	return nil, fmt.Errorf("'%s' object is not subscriptable", typeName(obj))
}

// sliceBounds resolves Python slice bounds for a sequence of length n.
func sliceBounds(n, start, stop, step int, hasStart, hasStop bool) (int, int) {
	clamp := func(i, lo, hi int) int { return max(lo, min(i, hi)) }
	if step > 0 {
		lo, hi := 0, n
		if hasStart {
			if start < 0 {
				start += n
			}
			lo = clamp(start, 0, n)
		}
		if hasStop {
			if stop < 0 {
				stop += n
			}
			hi = clamp(stop, 0, n)
		}
		return lo, hi
	}
	lo, hi := n-1, -1
	if hasStart {
		if start < 0 {
			start += n
		}
		lo = clamp(start, -1, n-1)
	}
	if hasStop {
		if stop < 0 {
			stop += n
		}
		hi = clamp(stop, -1, n-1)
	}
	return lo, hi
}

func (r *run) binary(n *nodes.BinaryExpression, sc *scope) (any, error) {
	left, err := r.eval(n.Left, sc)
	if err != nil {
		return nil, err
	}
	op := n.Operator.Token
	switch op.Type {
	case tokens.And:
		if !truthy(left) {
			return left, nil
		}
		return r.eval(n.Right, sc)
	case tokens.Or:
		if truthy(left) {
			return left, nil
		}
		return r.eval(n.Right, sc)
	}
	right, err := r.eval(n.Right, sc)
	if err != nil {
		return nil, err
	}
	switch op.Type {
	case tokens.Equals:
		return equal(left, right), nil
	case tokens.Ne:
		return !equal(left, right), nil
	case tokens.LowerThan, tokens.LowerThanOrEqual, tokens.GreaterThan, tokens.GreaterThanOrEqual:
		return compareOp(op.Type, left, right)
	case tokens.In:
		return contains(right, left)
	case tokens.Tilde:
		s := toStr(left) + toStr(right)
		return s, r.b.checkString(s)
	}
	return r.arith(op.Type, left, right)
}

func (r *run) arith(op tokens.Type, left, right any) (any, error) {
	if op == tokens.Addition {
		switch l := left.(type) {
		case string:
			if rs, ok := right.(string); ok {
				s := l + rs
				return s, r.b.checkString(s)
			}
		case []any:
			if rl, ok := right.([]any); ok {
				out := make([]any, 0, len(l)+len(rl))
				return append(append(out, l...), rl...), r.b.charge(len(l) + len(rl))
			}
		}
	}
	if ls, ok := left.(string); ok && op == tokens.Modulo {
		out, err := percentFormat(ls, right)
		if err != nil {
			return nil, err
		}
		return out, r.b.checkString(out)
	}
	if op == tokens.Multiply {
		var s string
		var n int
		var isStr bool
		if ls, ok := left.(string); ok {
			s, isStr = ls, true
			n, _ = right.(int)
			_, isInt := right.(int)
			isStr = isInt
		} else if rs, ok := right.(string); ok {
			s = rs
			n, isStr = left.(int)
		}
		if isStr {
			if n <= 0 {
				return "", nil
			}
			if len(s) > 0 && n > r.b.limits.MaxOutputBytes/len(s) {
				return nil, r.b.fail(&LimitError{Limit: "size", Detail: fmt.Sprintf("repeating a %d-byte string %d times exceeds %d bytes", len(s), n, r.b.limits.MaxOutputBytes)})
			}
			return strings.Repeat(s, n), nil
		}
	}
	li, lInt := left.(int)
	ri, rInt := right.(int)
	if lb, ok := left.(bool); ok {
		li, lInt = int(boolNum(lb)), true
	}
	if rb, ok := right.(bool); ok {
		ri, rInt = int(boolNum(rb)), true
	}
	lf, lNum := number(left)
	rf, rNum := number(right)
	if lInt {
		lf, lNum = float64(li), true
	}
	if rInt {
		rf, rNum = float64(ri), true
	}
	if !lNum || !rNum {
		return nil, fmt.Errorf("unsupported operand types for %v: '%s' and '%s'", op, typeName(left), typeName(right))
	}
	both := lInt && rInt
	switch op {
	case tokens.Addition:
		if both {
			return li + ri, nil
		}
		return lf + rf, nil
	case tokens.Subtraction:
		if both {
			return li - ri, nil
		}
		return lf - rf, nil
	case tokens.Multiply:
		if both {
			return li * ri, nil
		}
		return lf * rf, nil
	case tokens.Division:
		if rf == 0 {
			return nil, errors.New("division by zero")
		}
		return lf / rf, nil
	case tokens.FloorDivision:
		if rf == 0 {
			return nil, errors.New("integer division or modulo by zero")
		}
		if both {
			q := li / ri
			if (li%ri != 0) && ((li < 0) != (ri < 0)) {
				q--
			}
			return q, nil
		}
		return floorF(lf / rf), nil
	case tokens.Modulo:
		if rf == 0 {
			return nil, errors.New("integer division or modulo by zero")
		}
		if both {
			m := li % ri
			if m != 0 && (m < 0) != (ri < 0) {
				m += ri
			}
			return m, nil
		}
		return lf - rf*floorF(lf/rf), nil
	case tokens.Power:
		if both && ri >= 0 && ri < 64 {
			out := 1
			for i := 0; i < ri; i++ {
				out *= li
			}
			return out, nil
		}
		return powF(lf, rf), nil
	}
	return nil, fmt.Errorf("unsupported operator %v", op)
}

func compareOp(op tokens.Type, left, right any) (any, error) {
	var c int
	if ls, ok := left.(string); ok {
		rs, ok := right.(string)
		if !ok {
			return nil, fmt.Errorf("'<' not supported between 'str' and '%s'", typeName(right))
		}
		c = strings.Compare(ls, rs)
	} else {
		lf, ok1 := number(left)
		rf, ok2 := number(right)
		if lb, ok := left.(bool); ok {
			lf, ok1 = boolNum(lb), true
		}
		if rb, ok := right.(bool); ok {
			rf, ok2 = boolNum(rb), true
		}
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("'<' not supported between '%s' and '%s'", typeName(left), typeName(right))
		}
		switch {
		case lf < rf:
			c = -1
		case lf > rf:
			c = 1
		}
	}
	switch op {
	case tokens.LowerThan:
		return c < 0, nil
	case tokens.LowerThanOrEqual:
		return c <= 0, nil
	case tokens.GreaterThan:
		return c > 0, nil
	}
	return c >= 0, nil
}

// contains is Python's "needle in haystack".
func contains(haystack, needle any) (bool, error) {
	switch h := haystack.(type) {
	case string:
		n, ok := needle.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(needle))
		}
		return strings.Contains(h, n), nil
	case []any:
		for _, e := range h {
			if equal(e, needle) {
				return true, nil
			}
		}
		return false, nil
	case *omap:
		k, ok := needle.(string)
		if !ok {
			return false, nil
		}
		_, found := h.get(k)
		return found, nil
	case *namespace:
		k, _ := needle.(string)
		_, found := h.vals[k]
		return found, nil
	case undefined:
		return false, nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(haystack))
}

// percentFormat is Python's "format % values" for the conversions
// templates use: %s, %r, %d, %i, %f (with a precision), %%.
func percentFormat(format string, values any) (string, error) {
	args, isTuple := values.([]any)
	if !isTuple {
		args = []any{values}
	}
	var sb strings.Builder
	next := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			sb.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(format) && (format[j] == '.' || format[j] >= '0' && format[j] <= '9') {
			j++
		}
		if j >= len(format) {
			return "", errors.New("incomplete format")
		}
		spec, verb := format[i+1:j], format[j]
		i = j
		if verb == '%' {
			sb.WriteByte('%')
			continue
		}
		if next >= len(args) {
			return "", errors.New("not enough arguments for format string")
		}
		a := args[next]
		next++
		switch verb {
		case 's':
			sb.WriteString(toStr(a))
		case 'r':
			writeRepr(&sb, a, 0)
		case 'd', 'i':
			f, ok := number(a)
			if !ok {
				return "", fmt.Errorf("%%%c format: a number is required, not %s", verb, typeName(a))
			}
			sb.WriteString(strconv.Itoa(int(f)))
		case 'f':
			f, ok := number(a)
			if !ok {
				return "", fmt.Errorf("%%f format: a number is required, not %s", typeName(a))
			}
			prec := 6
			if k := strings.IndexByte(spec, '.'); k >= 0 {
				prec, _ = strconv.Atoi(spec[k+1:])
				prec = min(prec, 64)
			}
			sb.WriteString(strconv.FormatFloat(f, 'f', prec, 64))
		default:
			return "", fmt.Errorf("unsupported format character %q", verb)
		}
	}
	if next < len(args) && isTuple {
		return "", errors.New("not all arguments converted during string formatting")
	}
	return sb.String(), nil
}
