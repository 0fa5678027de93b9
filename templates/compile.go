package templates

import (
	"fmt"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Prism's evaluator is the only renderer, so a template is checked when
// it is loaded: every statement, filter, test and method it uses must be
// one the evaluator implements. The first that is not is refused with
// its name and position, before any request renders with it.

// unsupported is a construct the evaluator does not cover, or one the
// sandbox refuses, at offset pos of the rewritten source.
type unsupported struct {
	construct string // e.g. `filter "center"`
	pos       int
	why       string // "" for "is not supported by Prism's evaluator"
}

func (u *unsupported) Error() string {
	if u.why != "" {
		return u.construct + " " + u.why
	}
	return u.construct + " is not supported by Prism's evaluator"
}

func refuse(construct string, at *tokens.Token) *unsupported {
	u := &unsupported{construct: construct}
	if at != nil {
		u.pos = at.Pos
	}
	return u
}

// check walks the parsed template and returns the first construct the
// evaluator does not cover, or nil.
func check(t *nodes.Template) *unsupported { return checkNodes(t.Nodes) }

func checkNodes(ns []nodes.Node) *unsupported {
	for _, n := range ns {
		if u := checkNode(n); u != nil {
			return u
		}
	}
	return nil
}

func checkWrapper(w *nodes.Wrapper) *unsupported {
	if w == nil {
		return nil
	}
	return checkNodes(w.Nodes)
}

func checkNode(n nodes.Node) *unsupported {
	switch n := n.(type) {
	case *nodes.Data, *nodes.Comment:
		return nil
	case *nodes.Output:
		return checkExprs(n.Expression, n.Condition, n.Alternative)
	case *nodes.Wrapper:
		return checkWrapper(n)
	case *nodes.ControlStructureBlock:
		return checkStatement(n)
	}
	return refuse(fmt.Sprintf("template node %T", n), n.Position())
}

func checkStatement(n *nodes.ControlStructureBlock) *unsupported {
	switch cs := n.ControlStructure.(type) {
	case *controlStructures.IfControlStructure:
		if u := checkExprs(cs.Conditions...); u != nil {
			return u
		}
		for _, w := range cs.Wrappers {
			if u := checkWrapper(w); u != nil {
				return u
			}
		}
		return nil
	case *controlStructures.ForControlStructure:
		if u := checkExprs(cs.ObjectEvaluator, cs.IfCondition); u != nil {
			return u
		}
		if u := checkWrapper(cs.BodyWrapper); u != nil {
			return u
		}
		return checkWrapper(cs.EmptyWrapper)
	case *setStatement:
		if u := checkExprs(cs.target, cs.expression, cs.condition, cs.alternative); u != nil {
			return u
		}
		return checkWrapper(cs.body)
	case *controlStructures.MacroControlStructure:
		for _, p := range cs.Macro.Kwargs {
			if _, ok := p.Key.(*nodes.String); !ok {
				return refuse(fmt.Sprintf("macro %s parameter %s", cs.Name, p.Key), cs.Macro.Location)
			}
			if u := checkExprs(p.Value); u != nil {
				return u
			}
		}
		return checkWrapper(cs.Macro.Wrapper)
	case *controlStructures.CallControlStructure:
		if u := checkExprs(cs.Call); u != nil {
			return u
		}
		return checkWrapper(cs.Body)
	case *controlStructures.BreakControlStructure, *controlStructures.ContinueControlStructure, *rawStatement:
		return nil
	}
	return refuse(fmt.Sprintf("statement %q", n.Name), n.Location)
}

func checkExprs(es ...nodes.Expression) *unsupported {
	for _, e := range es {
		if u := checkExpr(e); u != nil {
			return u
		}
	}
	return nil
}

func checkArgs(es []nodes.Expression, kw map[string]nodes.Expression) *unsupported {
	if u := checkExprs(es...); u != nil {
		return u
	}
	for _, k := range sortedKeys(kw) { // the first in a stable order
		if u := checkExpr(kw[k]); u != nil {
			return u
		}
	}
	return nil
}

// knownMethod is a method name the evaluator has for some type.
func knownMethod(name string) bool {
	if _, ok := stringMethodSet[name]; ok {
		return true
	}
	_, ok := mapMethodSet[name]
	return ok || name == "cycle"
}

func checkExpr(e nodes.Expression) *unsupported {
	switch n := e.(type) {
	case nil:
		return nil
	case *nodes.String, *nodes.Integer, *nodes.Float, *nodes.Bool, *nodes.None, *nodes.Name, *nodes.Error:
		return nil
	case *nodes.List:
		return checkExprs(n.Val...)
	case *nodes.Tuple:
		return checkExprs(n.Val...)
	case *nodes.Dict:
		for _, p := range n.Pairs {
			if u := checkExprs(p.Key, p.Value); u != nil {
				return u
			}
		}
		return nil
	case *nodes.GetAttribute:
		return checkExpr(n.Node)
	case *nodes.GetItem:
		return checkExprs(n.Node, n.Arg)
	case *nodes.GetSlice:
		return checkExprs(n.Node, n.Start, n.End, n.Step)
	case *nodes.Call:
		return checkCall(n)
	case *nodes.Negation:
		return checkExpr(n.Term)
	case *nodes.UnaryExpression:
		return checkExpr(n.Term)
	case *nodes.BinaryExpression:
		return checkExprs(n.Left, n.Right)
	case *nodes.FilteredExpression:
		if u := checkExpr(n.Expression); u != nil {
			return u
		}
		for _, f := range n.Filters {
			if _, ok := filterSet[f.Name]; !ok {
				return refuse(fmt.Sprintf("filter %q", f.Name), f.Token)
			}
			if u := checkArgs(f.Args, f.Kwargs); u != nil {
				return u
			}
		}
		return nil
	case *nodes.TestExpression:
		if u := checkExpr(n.Expression); u != nil {
			return u
		}
		if _, ok := testSet[n.Test.Name]; !ok {
			return refuse(fmt.Sprintf("test %q", n.Test.Name), n.Test.Token)
		}
		return checkArgs(n.Test.Args, n.Test.Kwargs)
	}
	return refuse(fmt.Sprintf("expression %T", e), e.Position())
}

func checkCall(n *nodes.Call) *unsupported {
	if ga, ok := n.Func.(*nodes.GetAttribute); ok && ga.Attribute != "" {
		if !knownMethod(ga.Attribute) {
			return refuse(fmt.Sprintf("method %q", ga.Attribute), ga.Location)
		}
		if u := checkExpr(ga.Node); u != nil {
			return u
		}
	} else if fn, ok := n.Func.(nodes.Expression); !ok {
		return refuse(fmt.Sprintf("call of %T", n.Func), n.Location)
	} else if u := checkExpr(fn); u != nil {
		return u
	}
	return checkArgs(n.Args, n.Kwargs)
}
