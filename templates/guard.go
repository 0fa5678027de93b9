package templates

import (
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// guardTree walks a parsed template and routes every * operator through
// the size-checked multiply, so 'x' * 10**12 fails instead of allocating.
// Every statement a sandboxed template may contain is reached: the walk
// covers outputs, if, for, set, macro and call blocks.
func guardTree(t *nodes.Template) {
	for _, n := range t.Nodes {
		guardNode(n)
	}
}

func guardWrapper(w *nodes.Wrapper) {
	if w == nil {
		return
	}
	for _, n := range w.Nodes {
		guardNode(n)
	}
}

func guardNode(n nodes.Node) {
	switch n := n.(type) {
	case *nodes.Output:
		n.Expression = guardExpr(n.Expression)
		n.Condition = guardExpr(n.Condition)
		n.Alternative = guardExpr(n.Alternative)
	case *nodes.Wrapper:
		guardWrapper(n)
	case *nodes.ControlStructureBlock:
		switch cs := n.ControlStructure.(type) {
		case *controlStructures.IfControlStructure:
			for i := range cs.Conditions {
				cs.Conditions[i] = guardExpr(cs.Conditions[i])
			}
			for _, w := range cs.Wrappers {
				guardWrapper(w)
			}
		case *controlStructures.ForControlStructure:
			cs.ObjectEvaluator = guardExpr(cs.ObjectEvaluator)
			cs.IfCondition = guardExpr(cs.IfCondition)
			guardWrapper(cs.BodyWrapper)
			guardWrapper(cs.EmptyWrapper)
		case *setStatement:
			cs.target = guardExpr(cs.target)
			cs.expression = guardExpr(cs.expression)
			cs.condition = guardExpr(cs.condition)
			cs.alternative = guardExpr(cs.alternative)
			guardWrapper(cs.body)
		case *boundedMacro:
			for _, p := range cs.Macro.Kwargs {
				p.Value = guardExpr(p.Value)
			}
			guardWrapper(cs.Macro.Wrapper)
		case *controlStructures.CallControlStructure:
			if c, ok := guardExpr(cs.Call).(*nodes.Call); ok {
				cs.Call = c
			}
			guardWrapper(cs.Body)
		}
	}
}

// guardExpr rewrites e in place where it can and returns the expression
// to use in its stead.
func guardExpr(e nodes.Expression) nodes.Expression {
	switch n := e.(type) {
	case nil:
		return nil
	case *nodes.BinaryExpression:
		n.Left = guardExpr(n.Left)
		n.Right = guardExpr(n.Right)
		if n.Operator != nil && n.Operator.Token != nil && n.Operator.Token.Type == tokens.Multiply {
			return guardCall(mulName, n.Left, n.Right)
		}
	case *nodes.UnaryExpression:
		n.Term = guardExpr(n.Term)
	case *nodes.Negation:
		n.Term = guardExpr(n.Term)
	case *nodes.FilteredExpression:
		n.Expression = guardExpr(n.Expression)
		for _, f := range n.Filters {
			guardArgs(f.Args, f.Kwargs)
		}
	case *nodes.TestExpression:
		n.Expression = guardExpr(n.Expression)
		if n.Test != nil {
			guardArgs(n.Test.Args, n.Test.Kwargs)
		}
	case *nodes.Call:
		if n.Parent != nil {
			parent := n.Parent
			guarded := guardExpr(parent)
			n.Parent = guarded
			if ga, ok := n.Func.(*nodes.GetAttribute); ok && ga.Node == parent {
				ga.Node = guarded
			}
		}
		if fn, ok := n.Func.(nodes.Expression); ok {
			n.Func = guardExpr(fn)
		}
		guardArgs(n.Args, n.Kwargs)
	case *nodes.GetItem:
		n.Node = guardExpr(n.Node)
		n.Arg = guardExpr(n.Arg)
	case *nodes.GetSlice:
		n.Node = guardExpr(n.Node)
		n.Start = guardExpr(n.Start)
		n.End = guardExpr(n.End)
		n.Step = guardExpr(n.Step)
	case *nodes.GetAttribute:
		n.Node = guardExpr(n.Node)
	case *nodes.List:
		guardArgs(n.Val, nil)
	case *nodes.Tuple:
		guardArgs(n.Val, nil)
	case *nodes.Dict:
		for _, p := range n.Pairs {
			p.Key = guardExpr(p.Key)
			p.Value = guardExpr(p.Value)
		}
	case *nodes.Pair:
		n.Key = guardExpr(n.Key)
		n.Value = guardExpr(n.Value)
	}
	return e
}

func guardArgs(args []nodes.Expression, kwargs map[string]nodes.Expression) {
	for i := range args {
		args[i] = guardExpr(args[i])
	}
	for k, v := range kwargs {
		kwargs[k] = guardExpr(v)
	}
}
