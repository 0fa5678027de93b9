package templates

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// statements builds the set of block statements a sandboxed template may
// use. include, import, from, extends, block and with are absent, so a
// template using them fails to parse; for, set and macro are wrapped so
// every loop, assignment and macro call is charged to the render's budget.
func statements() *exec.ControlStructureSet {
	m := map[string]parser.ControlStructureParser{}
	for _, name := range []string{"if", "call", "raw", "break", "continue"} {
		if p, ok := builtins.ControlStructures.Get(name); ok {
			m[name] = p
		}
	}
	if p, ok := builtins.ControlStructures.Get("for"); ok {
		m["for"] = forParser(p)
	}
	if p, ok := builtins.ControlStructures.Get("macro"); ok {
		m["macro"] = macroParser(p)
	}
	m["set"] = parseSet
	return exec.NewControlStructureSet(m)
}

// forParser parses a for loop with the engine's parser and routes its
// iterable through the iteration guard.
func forParser(inner parser.ControlStructureParser) parser.ControlStructureParser {
	return func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := inner(p, args)
		if err != nil {
			return nil, err
		}
		loop, ok := cs.(*controlStructures.ForControlStructure)
		if !ok {
			return nil, errors.New("internal: unexpected for-loop node")
		}
		loop.ObjectEvaluator = guardCall(iterName, loop.ObjectEvaluator)
		return loop, nil
	}
}

// guardCall wraps expression in a call of the named sandbox helper.
func guardCall(name string, args ...nodes.Expression) *nodes.Call {
	var pos *tokens.Token
	if len(args) > 0 && args[0] != nil {
		pos = args[0].Position()
	}
	if pos == nil {
		pos = &tokens.Token{}
	}
	return &nodes.Call{
		Location: pos,
		Func:     &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: name, Line: pos.Line, Col: pos.Col}},
		Args:     args,
		Kwargs:   map[string]nodes.Expression{},
	}
}

// macroParser parses a macro with the engine's parser; the macro it
// defines counts its nesting depth, so recursion is bounded.
func macroParser(inner parser.ControlStructureParser) parser.ControlStructureParser {
	return func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := inner(p, args)
		if err != nil {
			return nil, err
		}
		m, ok := cs.(*controlStructures.MacroControlStructure)
		if !ok {
			return nil, errors.New("internal: unexpected macro node")
		}
		return &boundedMacro{m}, nil
	}
}

type boundedMacro struct {
	*controlStructures.MacroControlStructure
}

// Execute defines the macro in the current scope, wrapped in the depth
// and step accounting.
func (m *boundedMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	fn, err := exec.MacroNodeToFunc(m.Macro, r)
	if err != nil {
		return fmt.Errorf("macro %s: %w", m.Name, err)
	}
	b := budgetOf(r.Evaluator())
	var bounded exec.Macro = func(params *exec.VarArgs) *exec.Value {
		if err := b.step(); err != nil {
			return errValue(err)
		}
		if b.depth >= b.limits.MaxCallDepth {
			return errValue(b.fail(&LimitError{Limit: "calls", Detail: fmt.Sprintf("macro calls nested deeper than %d", b.limits.MaxCallDepth)}))
		}
		b.depth++
		defer func() { b.depth-- }()
		out := fn(params)
		if out != nil && out.IsString() {
			if err := b.checkString(out.String()); err != nil {
				return errValue(err)
			}
		}
		return out
	}
	r.Environment.Context.Set(m.Name, bounded)
	return nil
}

// setStatement is {% set target = expr [if cond else alt] %} or the block
// form {% set target %}...{% endset %}. Every value it stores is
// size-checked, so a loop that doubles a string stops at the cap.
type setStatement struct {
	location    *tokens.Token
	target      nodes.Expression
	expression  nodes.Expression
	condition   nodes.Expression
	alternative nodes.Expression
	body        *nodes.Wrapper
}

func (s *setStatement) Position() *tokens.Token { return s.location }
func (s *setStatement) String() string {
	return fmt.Sprintf("set(line %d)", s.location.Line)
}

func parseSet(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	s := &setStatement{location: p.Current()}
	target, err := args.ParseVariableOrLiteral()
	if err != nil {
		return nil, fmt.Errorf("set: %w", err)
	}
	switch target.(type) {
	case *nodes.Name, *nodes.GetAttribute, *nodes.GetItem:
		s.target = target
	default:
		return nil, args.Error("set needs a name, an attribute or an item to assign to", args.Current())
	}
	if args.Match(tokens.Assign) == nil {
		if !args.End() {
			return nil, args.Error("expected '=' or the end of the tag", args.Current())
		}
		body, endargs, err := p.WrapUntil("endset")
		if err != nil {
			return nil, err
		}
		if !endargs.End() {
			return nil, endargs.Error("endset takes no arguments", nil)
		}
		s.body = body
		return s, nil
	}
	if s.expression, err = args.ParseExpression(); err != nil {
		return nil, err
	}
	cond, alt, err := args.ParseCondition()
	if err != nil {
		return nil, err
	}
	if cond != nil {
		if alt == nil {
			return nil, args.Error("set with 'if' needs an 'else'", args.Current())
		}
		s.condition, s.alternative = cond, alt
	}
	if !args.End() {
		return nil, args.Error("unexpected tokens at the end of set", args.Current())
	}
	return s, nil
}

// Execute evaluates the value and stores it.
func (s *setStatement) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	b := budgetOf(r.Evaluator())
	if err := b.step(); err != nil {
		return err
	}
	var value *exec.Value
	switch {
	case s.body != nil:
		sub := r.Inherit()
		out := &output{sb: &strings.Builder{}, b: b}
		sub.Output = out
		if err := sub.ExecuteWrapper(s.body); err != nil {
			return err
		}
		value = exec.AsSafeValue(out.sb.String())
	case s.condition != nil:
		cond := r.Eval(s.condition)
		if cond.IsError() {
			return cond
		}
		if cond.IsTrue() {
			value = r.Eval(s.expression)
		} else {
			value = r.Eval(s.alternative)
		}
	default:
		value = r.Eval(s.expression)
	}
	if value.IsError() {
		return value
	}
	if value.IsString() {
		if err := b.checkString(value.String()); err != nil {
			return err
		}
	}
	switch t := s.target.(type) {
	case *nodes.Name:
		r.Environment.Context.Set(t.Name.Val, value.Interface())
	case *nodes.GetAttribute:
		obj := r.Eval(t.Node)
		if obj.IsError() {
			return obj
		}
		if _, isMap := value.Interface().(map[string]any); isMap {
			// A namespace holding a namespace could hold itself, and the
			// engine prints such a cycle by recursing without end.
			return fmt.Errorf("set %s: a namespace cannot hold a mapping in the sandbox", t.Attribute)
		}
		if err := obj.Set(exec.AsValue(t.Attribute), value.Interface()); err != nil {
			return fmt.Errorf("set %s: %w", t.Attribute, err)
		}
	case *nodes.GetItem:
		obj := r.Eval(t.Node)
		if obj.IsError() {
			return obj
		}
		key := r.Eval(t.Arg)
		if key.IsError() {
			return key
		}
		if err := obj.Set(key, value.Interface()); err != nil {
			return fmt.Errorf("set item: %w", err)
		}
	}
	return nil
}
