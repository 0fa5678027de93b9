package templates

import (
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
)

// compiles reports whether Prism's evaluator covers every statement,
// filter, test and method the template uses. A template that uses
// something else ({% raw %}, a filter or method only gonja has) is rendered by gonja's renderer instead, with the same
// sandbox bounds.
func compiles(t *nodes.Template) bool {
	for _, n := range t.Nodes {
		if !nodeCompiles(n) {
			return false
		}
	}
	return true
}

func wrapperCompiles(w *nodes.Wrapper) bool {
	if w == nil {
		return true
	}
	for _, n := range w.Nodes {
		if !nodeCompiles(n) {
			return false
		}
	}
	return true
}

func nodeCompiles(n nodes.Node) bool {
	switch n := n.(type) {
	case *nodes.Data, *nodes.Comment:
		return true
	case *nodes.Output:
		return exprCompiles(n.Expression) && exprCompiles(n.Condition) && exprCompiles(n.Alternative)
	case *nodes.Wrapper:
		return wrapperCompiles(n)
	case *nodes.ControlStructureBlock:
		switch cs := n.ControlStructure.(type) {
		case *controlStructures.IfControlStructure:
			for _, c := range cs.Conditions {
				if !exprCompiles(c) {
					return false
				}
			}
			for _, w := range cs.Wrappers {
				if !wrapperCompiles(w) {
					return false
				}
			}
			return true
		case *controlStructures.ForControlStructure:
			return exprCompiles(cs.ObjectEvaluator) && exprCompiles(cs.IfCondition) &&
				wrapperCompiles(cs.BodyWrapper) && wrapperCompiles(cs.EmptyWrapper)
		case *setStatement:
			return exprCompiles(cs.target) && exprCompiles(cs.expression) && exprCompiles(cs.condition) &&
				exprCompiles(cs.alternative) && wrapperCompiles(cs.body)
		case *boundedMacro:
			for _, p := range cs.Macro.Kwargs {
				if _, ok := p.Key.(*nodes.String); !ok || !exprCompiles(p.Value) {
					return false
				}
			}
			return wrapperCompiles(cs.Macro.Wrapper)
		case *controlStructures.CallControlStructure:
			return exprCompiles(cs.Call) && wrapperCompiles(cs.Body)
		case *controlStructures.BreakControlStructure, *controlStructures.ContinueControlStructure:
			return true
		}
	}
	return false
}

func exprsCompile(es []nodes.Expression, kw map[string]nodes.Expression) bool {
	for _, e := range es {
		if !exprCompiles(e) {
			return false
		}
	}
	for _, e := range kw {
		if !exprCompiles(e) {
			return false
		}
	}
	return true
}

// knownMethod is a method name the evaluator has for some type.
func knownMethod(name string) bool {
	if _, ok := stringMethodSet[name]; ok {
		return true
	}
	_, ok := mapMethodSet[name]
	return ok || name == "cycle"
}

func exprCompiles(e nodes.Expression) bool {
	switch n := e.(type) {
	case nil:
		return true
	case *nodes.String, *nodes.Integer, *nodes.Float, *nodes.Bool, *nodes.None, *nodes.Name:
		return true
	case *nodes.List:
		return exprsCompile(n.Val, nil)
	case *nodes.Tuple:
		return exprsCompile(n.Val, nil)
	case *nodes.Dict:
		for _, p := range n.Pairs {
			if !exprCompiles(p.Key) || !exprCompiles(p.Value) {
				return false
			}
		}
		return true
	case *nodes.GetAttribute:
		return exprCompiles(n.Node)
	case *nodes.GetItem:
		return exprCompiles(n.Node) && exprCompiles(n.Arg)
	case *nodes.GetSlice:
		return exprCompiles(n.Node) && exprCompiles(n.Start) && exprCompiles(n.End) && exprCompiles(n.Step)
	case *nodes.Call:
		if ga, ok := n.Func.(*nodes.GetAttribute); ok && ga.Attribute != "" {
			if !knownMethod(ga.Attribute) || !exprCompiles(ga.Node) {
				return false
			}
		} else if fn, ok := n.Func.(nodes.Expression); !ok || !exprCompiles(fn) {
			return false
		}
		return exprsCompile(n.Args, n.Kwargs)
	case *nodes.Negation:
		return exprCompiles(n.Term)
	case *nodes.UnaryExpression:
		return exprCompiles(n.Term)
	case *nodes.BinaryExpression:
		return exprCompiles(n.Left) && exprCompiles(n.Right)
	case *nodes.FilteredExpression:
		if !exprCompiles(n.Expression) {
			return false
		}
		for _, f := range n.Filters {
			if _, ok := filterSet[f.Name]; !ok || !exprsCompile(f.Args, f.Kwargs) {
				return false
			}
		}
		return true
	case *nodes.TestExpression:
		if _, ok := testSet[n.Test.Name]; !ok {
			return false
		}
		return exprCompiles(n.Expression) && exprsCompile(n.Test.Args, n.Test.Kwargs)
	case *nodes.Error:
		return true
	}
	return false
}

// hasRecursiveLoop reports a {% for ... recursive %} anywhere in the tree.
// gonja's renderer does not bound its recursion, so such a template is
// only accepted when Prism's evaluator renders it.
func hasRecursiveLoop(ns []nodes.Node) bool {
	for _, n := range ns {
		b, ok := n.(*nodes.ControlStructureBlock)
		if !ok {
			continue
		}
		var inner []*nodes.Wrapper
		switch cs := b.ControlStructure.(type) {
		case *controlStructures.ForControlStructure:
			if cs.Recursive {
				return true
			}
			inner = append(inner, cs.BodyWrapper, cs.EmptyWrapper)
		case *controlStructures.IfControlStructure:
			inner = cs.Wrappers
		case *setStatement:
			inner = append(inner, cs.body)
		case *boundedMacro:
			inner = append(inner, cs.Macro.Wrapper)
		case *controlStructures.CallControlStructure:
			inner = append(inner, cs.Body)
		}
		for _, w := range inner {
			if w != nil && hasRecursiveLoop(w.Nodes) {
				return true
			}
		}
	}
	return false
}
