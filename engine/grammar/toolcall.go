package grammar

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prism-local/prism/internal/jsonorder"
)

// CallSyntax is how a model family writes tool calls, as text: the list of
// calls is Begin, then each call as Open {"name": NAME, ArgsKey: ARGS}
// Close with Sep between two calls, then End. Bounded whitespace (see
// docs/structured-outputs.md) is allowed around every part. The tools
// package knows the families (tools.Format.Syntax); the grammar only
// reads this description.
//
// Families whose markers are special tokens and whose calls put the name
// outside the JSON (DeepSeek-V3, harmony) set Tokens and NameEnd: a call
// is then Open NAME NameEnd ARGS Close, with the name written raw, and
// every marker listed in Tokens is matched by its token id (see
// tokencall.go). No whitespace is allowed between the parts of such a
// syntax: they are written exactly as given.
type CallSyntax struct {
	// Trigger is the text that opens the calls: a prefix of Begin+Open
	// ("<tool_call>", "[TOOL_CALLS]"). With CallOptions.Lazy the text is
	// free until the model writes it. Empty with WholeAnswer.
	Trigger string
	// Begin and End wrap the list ("[TOOL_CALLS][" and "]" for Mistral).
	Begin, End string
	// Open and Close wrap each call ("<tool_call>" and "</tool_call>").
	Open, Close string
	// Sep separates calls ("," for Mistral, ";" for Llama 3).
	Sep string
	// ArgsKey names the arguments member: "arguments", or Llama 3's
	// "parameters".
	ArgsKey string
	// WholeAnswer means calls, when there are any, are the whole answer
	// (Llama 3's JSON calls): with Lazy, an answer whose first
	// non-whitespace character is "{" is the calls and any other is free.
	WholeAnswer bool

	// Tokens lists the markers that are single special or added tokens
	// of the vocabulary ("<｜tool▁calls▁begin｜>", "<|channel|>"). Where one
	// of these texts occurs in the parts above, only that token is
	// allowed, never other tokens spelling its text; in the free text of
	// a Lazy grammar the tokens are allowed but plain tokens may not spell
	// them, so a marker in the decoded text is always the token. A
	// marker that is an EOS id of the vocabulary (gpt-oss's <|call|>)
	// may only end Close: the text ends there, so one call is the most.
	Tokens []string
	// NameEnd, when set, makes a call Open NAME NameEnd ARGS Close: the
	// tool's name as raw text and the arguments as a bare JSON object
	// ("\n```json\n" for DeepSeek-V3). ArgsKey is then not used. Names
	// must be made of ASCII letters, digits, '_', '-' and '.'.
	NameEnd string
	// Guard, with Lazy and Tokens, is text the free part never holds, so
	// that the model can write it only inside a constrained call:
	// harmony's "to=", which addresses a message to a tool wherever the
	// header puts it.
	Guard string
	// ContentBegin, with CallOptions.Content and Tokens, is written before
	// the value of an answer that makes no call: harmony's final-channel
	// opening "<|channel|>final<|message|>", so the value is the final
	// message.
	ContentBegin string
}

// marked reports whether the syntax uses token markers or raw names,
// which tokencall.go compiles.
func (sx CallSyntax) marked() bool {
	return len(sx.Tokens) > 0 || sx.NameEnd != "" || sx.ContentBegin != ""
}

// Tool is one tool the model may call.
type Tool struct {
	// Name is the function's name.
	Name string
	// Parameters is the JSON Schema of its arguments (an object); nil or
	// empty allows any object.
	Parameters []byte
	// Strict refuses, with a *SchemaError, keywords of Parameters the
	// grammar cannot enforce; otherwise they are listed in
	// Grammar.Warnings.
	Strict bool
	// Param names the request field of the schema, for errors
	// ("tools[0].function.parameters").
	Param string
}

// CallOptions control a tool-call grammar.
type CallOptions struct {
	Syntax CallSyntax
	// Parallel allows one or more calls; otherwise exactly one.
	Parallel bool
	// Lazy is tool_choice "auto": free text (special tokens allowed) until
	// the model writes Syntax.Trigger, then the calls; the text may also
	// end without any call. Without Lazy the text is the calls.
	Lazy bool
	// Written is text already in the answer before generation starts (the
	// call's opening a server forced into the prompt): the grammar starts
	// after it.
	Written string
	// After and AfterOpen leave reasoning first, as in Options.
	After, AfterOpen string
	// Content, with Lazy, is the JSON Schema of an answer that makes no
	// call (response_format together with tools): the text is then either
	// the calls or one JSON value valid under Content, instead of free
	// text. It compiles strict, with ContentParam naming it in errors.
	Content      []byte
	ContentParam string
}

// CompileToolCalls compiles a grammar whose text is tool calls of tools in
// the syntax o.Syntax, each call naming one tool and carrying arguments
// valid for that tool's parameters.
func CompileToolCalls(v *Vocabulary, tools []Tool, o CallOptions) (*Grammar, error) {
	sx := o.Syntax
	switch {
	case len(tools) == 0:
		return nil, &SchemaError{Param: "tools", Message: "a tool-call grammar needs at least one tool"}
	case sx.marked():
		return compileMarked(v, tools, o)
	case sx.ArgsKey == "":
		return nil, errors.New("grammar: CallSyntax.ArgsKey is empty")
	case o.Lazy && !sx.WholeAnswer && (sx.Trigger == "" || !strings.HasPrefix(sx.Begin+sx.Open, sx.Trigger)):
		return nil, fmt.Errorf("grammar: CallSyntax.Trigger %q must be a non-empty prefix of Begin+Open %q", sx.Trigger, sx.Begin+sx.Open)
	}
	c := newSchemaCompiler(&jsonorder.Value{Kind: jsonorder.Bool, Bool: true}, Options{After: o.After, AfterOpen: o.AfterOpen})
	var bodies, argSubs []int32
	for i, t := range tools {
		args, err := c.toolArgs(t, i)
		if err != nil {
			return nil, err
		}
		argSubs = append(argSubs, args)
		bodies = append(bodies, c.callBody(t.Name, sx.ArgsKey, args))
	}
	if c.err != nil {
		return nil, c.err
	}
	if err := c.callable(tools, argSubs); err != nil {
		return nil, err
	}
	n := c.n
	// One call after its Open: {"name": ..., ArgsKey: ...} Close.
	rest := func() frag {
		alts := make([]frag, len(bodies))
		for i, b := range bodies {
			alts[i] = n.call(b)
		}
		return n.seq(c.gap(), n.alt(alts...), c.gap(), c.literalText(sx.Close))
	}
	open := sx.Begin + sx.Open
	head := open
	if o.Lazy && !sx.WholeAnswer {
		head = open[len(sx.Trigger):] // the trigger itself ends the free text
	}
	parts := []frag{c.literalText(head), rest()}
	if o.Parallel {
		more := n.seq(c.gap(), c.literalText(sx.Sep), c.gap(), c.literalText(sx.Open), rest())
		parts = append(parts, n.star(more))
	}
	parts = append(parts, c.gap(), c.literalText(sx.End))
	list := n.seq(parts...)
	entry := n.add()
	switch {
	case !o.Lazy:
		c.finishSub(entry, list)
	case o.Content != nil:
		value, err := c.contentValue(o.Content, o.ContentParam)
		if err != nil {
			return nil, err
		}
		whole := list
		if !sx.WholeAnswer { // the list as written from its first byte, trigger included
			whole = n.seq(c.literalText(sx.Trigger), list)
		}
		c.finishSub(entry, n.alt(n.call(value), whole))
	case sx.WholeAnswer:
		c.finishSub(entry, n.alt(list, c.freeNotBrace()))
	default:
		c.finishSub(entry, c.untilTrigger(sx.Trigger, list))
	}
	g, err := c.finish(v, entry)
	if err != nil {
		return nil, err
	}
	if o.Written != "" && !g.advanceInit([]byte(o.Written)) {
		return nil, fmt.Errorf("grammar: the written text %q does not start a tool call in this syntax", o.Written)
	}
	return g, nil
}

// toolArgs compiles one tool's parameters as a sub-network; its $refs
// resolve within its own schema.
func (c *schemaCompiler) toolArgs(t Tool, i int) (int32, error) {
	param := t.Param
	if param == "" {
		param = fmt.Sprintf("tools[%d].function.parameters", i)
	}
	if t.Name == "" {
		return 0, &SchemaError{Param: fmt.Sprintf("tools[%d].function.name", i), Message: "a tool needs a name"}
	}
	if len(strings.TrimSpace(string(t.Parameters))) == 0 {
		sub := c.n.add()
		c.anyValue()
		c.finishSub(sub, c.anyObject())
		return sub, nil
	}
	root, err := jsonorder.Parse(t.Parameters)
	if err != nil {
		return 0, &SchemaError{Param: param, Message: fmt.Sprintf("the schema is not valid JSON: %v", err)}
	}
	c.root, c.param, c.strict = root, param, t.Strict
	c.merged = map[string]*jsonorder.Value{}
	before := len(c.warnings)
	sub := c.sub(root, "")
	if c.err != nil {
		return 0, c.err
	}
	for i := before; i < len(c.warnings); i++ {
		c.warnings[i].Path = param + c.warnings[i].Path // say which tool
	}
	return sub, nil
}

// callable refuses a tool whose parameters no JSON value satisfies: its
// call could never be written, which under "auto" would otherwise pass
// unnoticed (the free text alone still compiles). args are the tools'
// argument sub-networks, in order.
func (c *schemaCompiler) callable(tools []Tool, args []int32) error {
	prod := c.n.productive()
	for i, a := range args {
		if !prod[a] {
			param := tools[i].Param
			if param == "" {
				param = fmt.Sprintf("tools[%d].function.parameters", i)
			}
			return &SchemaError{Param: param, Message: fmt.Sprintf("tool %q: %v", tools[i].Name, errEmpty)}
		}
	}
	return nil
}

// contentValue compiles the schema of an answer that is not a call.
func (c *schemaCompiler) contentValue(schema []byte, param string) (int32, error) {
	if param == "" {
		param = "response_format"
	}
	root, err := jsonorder.Parse(schema)
	if err != nil {
		return 0, &SchemaError{Param: param, Message: fmt.Sprintf("the schema is not valid JSON: %v", err)}
	}
	c.root, c.param, c.strict = root, param, true
	c.merged = map[string]*jsonorder.Value{}
	sub := c.sub(root, "")
	if c.err != nil {
		return 0, c.err
	}
	return sub, nil
}

// callBody is the sub-network {"name": NAME, KEY: ARGS} of one tool.
func (c *schemaCompiler) callBody(name, key string, args int32) int32 {
	n := c.n
	sub := n.add()
	f := n.seq(n.lit("{"), c.gap(), n.jsonStringLit("name"), c.gap(), n.lit(":"), c.gap(), n.jsonStringLit(name), c.gap(),
		n.lit(","), c.gap(), n.jsonStringLit(key), c.gap(), n.lit(":"), c.gap(), n.call(args), c.gap(), n.lit("}"))
	c.finishSub(sub, f)
	return sub
}

// literalText matches s, where special and added tokens spelling it are
// allowed (Qwen's <tool_call> is one token).
func (c *schemaCompiler) literalText(s string) frag {
	n := c.n
	first := int32(len(n.st))
	f := n.lit(s)
	for i := first; i < int32(len(n.st)); i++ {
		n.st[i].literal = true
	}
	return f
}

// untilTrigger is free text (special tokens allowed) that may end at any
// point, or continue into then once it has spelled trigger.
func (c *schemaCompiler) untilTrigger(trigger string, then frag) frag {
	n := c.n
	first := int32(len(n.st))
	kmp := n.upTo(trigger)
	last := int32(len(n.st))
	out := n.add()
	for i := first; i < last; i++ {
		n.st[i].literal = true
		if i != kmp.out {
			n.eps(i, out) // the text may end before any call
		}
	}
	n.eps(kmp.out, then.in)
	n.eps(then.out, out)
	return frag{kmp.in, out}
}

// freeNotBrace is free text (special tokens allowed) whose first
// non-whitespace byte is not "{": the answer of a WholeAnswer syntax that
// makes no call. Its whitespace is free text too, so it is not bounded.
func (c *schemaCompiler) freeNotBrace() frag {
	n := c.n
	first, anyText := n.add(), n.add()
	for _, r := range [][2]byte{{0, '\t' - 1}, {'\v', '\f'}, {'\r' + 1, ' ' - 1}, {' ' + 1, '{' - 1}, {'{' + 1, 0xFF}} {
		n.edge(first, r[0], r[1], anyText)
	}
	for _, ws := range []byte{' ', '\t', '\n', '\r'} {
		n.edge(first, ws, ws, first)
	}
	n.edge(anyText, 0, 0xFF, anyText)
	n.st[first].literal, n.st[anyText].literal = true, true
	out := n.add()
	n.eps(first, out)
	n.eps(anyText, out)
	return frag{first, out}
}

// advanceInit moves the grammar's start past text; false if the grammar
// does not allow it.
func (g *Grammar) advanceInit(text []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.init
	for _, b := range text {
		if s = g.d.step(s, b); s < 0 {
			return false
		}
	}
	g.init = s
	return true
}
