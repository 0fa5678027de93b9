package templates

import (
	"fmt"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// statementSet is the block statements a sandboxed template may use, as
// the parser looks them up.
type statementSet map[string]parser.ControlStructureParser

// Get returns the parser of the statement name.
func (s statementSet) Get(name string) (parser.ControlStructureParser, bool) {
	p, ok := s[name]
	return p, ok
}

// sandboxRefused are Jinja statements the sandbox leaves out, with why:
// the first four would read other templates (files), the rest are not
// part of the chat-template dialect.
var sandboxRefused = map[string]string{
	"include": "is not allowed: a template cannot load another",
	"import":  "is not allowed: a template cannot load another",
	"from":    "is not allowed: a template cannot load another",
	"extends": "is not allowed: a template cannot load another",
	"block":   "", "with": "", "filter": "", "autoescape": "", "trans": "", "do": "",
}

// statements builds the parsers of the block statements: gonja's for if,
// for, macro, call, break and continue, Prism's own for set and raw, and
// for every statement the sandbox leaves out a parser that refuses it by
// name and position.
func statements() statementSet {
	m := statementSet{"set": parseSet, "raw": parseRaw}
	for _, name := range []string{"if", "for", "macro", "call", "break", "continue"} {
		if p, ok := controlStructures.All.Get(name); ok {
			m[name] = p
		}
	}
	for name, why := range sandboxRefused {
		m[name] = func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
			at := args.Current()
			if at == nil {
				at = p.Current()
			}
			u := refuse(fmt.Sprintf("statement %q", name), at)
			u.why = why
			return nil, u
		}
	}
	return m
}

// rawStatement is {% raw %}...{% endraw %}: its text is written as it is.
type rawStatement struct{ data *nodes.Data }

func (s *rawStatement) Position() *tokens.Token { return s.data.Position() }
func (s *rawStatement) String() string          { return fmt.Sprintf("raw(line %d)", s.data.Data.Line) }

func parseRaw(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	if !args.End() {
		return nil, args.Error("raw takes no arguments", args.Current())
	}
	body, _, err := p.WrapUntil("endraw")
	if err != nil {
		return nil, err
	}
	s := &rawStatement{data: &nodes.Data{Data: &tokens.Token{Type: tokens.Data, Pos: p.Current().Pos}}}
	switch len(body.Nodes) {
	case 0:
	case 1:
		d, ok := body.Nodes[0].(*nodes.Data)
		if !ok {
			return nil, p.Error("raw holds text only", body.Nodes[0].Position())
		}
		s.data = d
	default:
		return nil, p.Error("raw holds text only", body.Nodes[1].Position())
	}
	return s, nil
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
