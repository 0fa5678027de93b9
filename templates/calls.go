package templates

import (
	"errors"
	"fmt"
	"math"

	"github.com/nikolalohinski/gonja/v2/nodes"
)

func floorF(f float64) float64  { return math.Floor(f) }
func powF(a, b float64) float64 { return math.Pow(a, b) }

// call evaluates a call: a method (obj.name(...)), a macro or a builtin.
// caller is the body of an enclosing {% call %} block, if any.
func (r *run) call(n *nodes.Call, sc *scope, caller *macroValue) (any, error) {
	if err := r.b.step(); err != nil {
		return nil, err
	}
	args, err := r.evalList(n.Args, sc)
	if err != nil {
		return nil, err
	}
	var kw map[string]any
	if len(n.Kwargs) > 0 {
		kw = make(map[string]any, len(n.Kwargs))
		for k, e := range n.Kwargs {
			v, err := r.eval(e, sc)
			if err != nil {
				return nil, err
			}
			kw[k] = v
		}
	}
	if ga, ok := n.Func.(*nodes.GetAttribute); ok && ga.Attribute != "" {
		obj, err := r.eval(ga.Node, sc)
		if err != nil {
			return nil, err
		}
		if fn, found := methodOf(obj, ga.Attribute); found {
			return fn(r, args, kw)
		}
		callee, err := getAttr(obj, ga.Attribute)
		if err != nil {
			return nil, err
		}
		return r.invoke(callee, args, kw, caller, ga.Attribute)
	}
	var name string
	if nm, ok := n.Func.(*nodes.Name); ok {
		name = nm.Name.Val
	}
	callee, err := r.eval(n.Func.(nodes.Expression), sc)
	if err != nil {
		return nil, err
	}
	return r.invoke(callee, args, kw, caller, name)
}

func (r *run) invoke(callee any, args []any, kw map[string]any, caller *macroValue, name string) (any, error) {
	switch f := callee.(type) {
	case builtinFunc:
		return f(r, args, kw)
	case *macroValue:
		return r.callMacro(f, args, kw, caller)
	case *loopInfo:
		if f.recurse == nil || len(args) != 1 {
			return nil, errors.New("loop(...) needs a recursive loop and one argument")
		}
		return f.recurse(args[0])
	case undefined:
		if name == "" {
			name = "value"
		}
		return nil, fmt.Errorf("'%s' is undefined", name)
	}
	return nil, fmt.Errorf("'%s' object is not callable", typeName(callee))
}

func (r *run) callMacro(m *macroValue, args []any, kw map[string]any, caller *macroValue) (any, error) {
	b := r.b
	if b.depth >= b.limits.MaxCallDepth {
		return nil, b.fail(&LimitError{Limit: "calls", Detail: fmt.Sprintf("macro calls nested deeper than %d", b.limits.MaxCallDepth)})
	}
	b.depth++
	defer func() { b.depth-- }()
	frame := &scope{vars: make(map[string]any, 4), parent: m.closure}
	var body []nodes.Node
	if m.node == nil { // caller()
		body = m.body.Nodes
	} else {
		node := m.node
		body = node.Wrapper.Nodes
		var extra []any
		for i, a := range args {
			if i < len(node.Kwargs) {
				frame.vars[node.Kwargs[i].Key.(*nodes.String).Val] = a
			} else {
				extra = append(extra, a)
			}
		}
		if len(extra) > 0 && node.VarArgsName == "" {
			return nil, fmt.Errorf("macro '%s' takes %d arguments, got %d", node.Name, len(node.Kwargs), len(args))
		}
		var extraKw *omap
		for k, v := range kw {
			known := false
			for _, p := range node.Kwargs {
				if p.Key.(*nodes.String).Val == k {
					known = true
					break
				}
			}
			if known {
				frame.vars[k] = v
				continue
			}
			if node.KwArgsName == "" {
				return nil, fmt.Errorf("macro '%s' takes no keyword argument '%s'", node.Name, k)
			}
			if extraKw == nil {
				extraKw = newOmap(2)
			}
			extraKw.put(k, v)
		}
		for _, p := range node.Kwargs {
			k := p.Key.(*nodes.String).Val
			if _, set := frame.vars[k]; set {
				continue
			}
			v, err := r.eval(p.Value, frame)
			if err != nil {
				return nil, err
			}
			frame.vars[k] = v
		}
		if node.VarArgsName != "" {
			if extra == nil {
				extra = []any{}
			}
			frame.vars[node.VarArgsName] = extra
		}
		if node.KwArgsName != "" {
			if extraKw == nil {
				extraKw = newOmap(0)
			}
			frame.vars[node.KwArgsName] = extraKw
		}
		if caller != nil {
			frame.vars["caller"] = caller
		}
	}
	sub := r.sub()
	if err := sub.execAll(body, frame); err != nil {
		return nil, err
	}
	return sub.out.sb.String(), nil
}

// globalFuncs are the functions every template can call.
func globalFuncs() map[string]any {
	return map[string]any{
		// The parser reads these literals as names.
		"none": nil, "None": nil, "true": true, "True": true, "false": false, "False": false,
		"raise_exception": builtinFunc(func(r *run, args []any, _ map[string]any) (any, error) {
			msg := ""
			if len(args) > 0 {
				msg = toStr(args[0])
			}
			err := &TemplateError{Phase: "render", Raised: true, Message: msg}
			if r.b.raised == nil {
				r.b.raised = err
			}
			return nil, err
		}),
		"strftime_now": builtinFunc(func(r *run, args []any, _ map[string]any) (any, error) {
			if len(args) != 1 {
				return nil, errors.New("strftime_now takes one format string")
			}
			f, ok := args[0].(string)
			if !ok {
				return nil, errors.New("strftime_now takes one format string")
			}
			return strftime(r.b.now(), f), nil
		}),
		"range": builtinFunc(func(r *run, args []any, _ map[string]any) (any, error) {
			ints := make([]int, len(args))
			for i, a := range args {
				n, ok := a.(int)
				if !ok {
					return nil, fmt.Errorf("range() argument %d is not an integer", i+1)
				}
				ints[i] = n
			}
			start, step, n, err := r.b.rangeOf(ints)
			if err != nil {
				return nil, err
			}
			out := make([]any, n)
			for i := range out {
				out[i] = start + i*step
			}
			return out, nil
		}),
		"namespace": builtinFunc(func(_ *run, args []any, kw map[string]any) (any, error) {
			ns := &namespace{vals: make(map[string]any, len(kw))}
			for _, a := range args {
				if m, ok := a.(*omap); ok {
					for i, k := range m.keys {
						ns.vals[k] = m.vals[i]
					}
				}
			}
			for k, v := range kw {
				ns.vals[k] = v
			}
			return ns, nil
		}),
		"dict": builtinFunc(func(_ *run, _ []any, kw map[string]any) (any, error) {
			m := newOmap(len(kw))
			for _, k := range sortedKeys(kw) {
				m.put(k, kw[k])
			}
			return m, nil
		}),
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
