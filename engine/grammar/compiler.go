package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/prism-local/prism/internal/jsonorder"
)

// Options control how a schema compiles.
type Options struct {
	// Strict refuses, with a *SchemaError naming it, every keyword the
	// grammar cannot enforce. Without Strict such keywords are left out
	// and listed in Grammar.Warnings.
	Strict bool
	// Param names the request field the schema came in, for errors;
	// "response_format" when empty.
	Param string
	// Suffix is literal text that must follow the value before the text
	// may end: the closing of a tool call whose opening was forced into the
	// prompt ("}" for Llama 3's {"name": ..., "parameters": ...}, "}]" for
	// Mistral's). Special and added tokens whose text fits the suffix are
	// allowed there, and only there.
	Suffix string
	// After leaves the text free up to and including the first occurrence
	// of After, and constrains what follows: reasoning first, with After
	// the think block's closing tag ("</think>") or harmony's opening of
	// the final channel. The free part is bounded only by max_tokens; its
	// special and added tokens are allowed (the reasoning may need them).
	// Set it only when the model will reason: the value cannot start
	// before After has been written, unless AfterOpen is set too.
	After string
	// AfterOpen, with After, makes the free part optional, for a model
	// that decides itself whether to reason: the text either opens with
	// AfterOpen (the think block's opening tag; as plain text, or with the
	// special and added tokens that spell parts of it) and is free up to
	// After, or is the value from its first byte.
	AfterOpen string

	// proofOnly leaves overlapping oneOf branches unrewritten (tests).
	proofOnly bool
}

func (o Options) param() string {
	if o.Param == "" {
		return "response_format"
	}
	return o.Param
}

// CompileSchema compiles a JSON Schema (draft 2020-12; the older drafts'
// items arrays and boolean exclusive bounds are understood too) into a
// Grammar over v. The text it allows is one JSON value valid under the
// schema, with whitespace bounded as docs/structured-outputs.md describes.
func CompileSchema(v *Vocabulary, schema []byte, o Options) (*Grammar, error) {
	root, err := jsonorder.Parse(schema)
	if err != nil {
		return nil, &SchemaError{Param: o.param(), Message: fmt.Sprintf("the schema is not valid JSON: %v", err)}
	}
	c := newSchemaCompiler(root, o)
	entry := c.sub(root, "")
	if c.err != nil {
		return nil, c.err
	}
	return c.finish(v, entry)
}

// JSONObject compiles JSON mode: any JSON object. Of o, Suffix, After and
// AfterOpen apply; there is no keyword to refuse or name.
func JSONObject(v *Vocabulary, o Options) (*Grammar, error) {
	c := newSchemaCompiler(&jsonorder.Value{Kind: jsonorder.Bool, Bool: true}, Options{Suffix: o.Suffix, After: o.After, AfterOpen: o.AfterOpen})
	c.anyValue()
	entry := c.n.add()
	c.finishSub(entry, c.anyObject())
	return c.finish(v, entry)
}

// finish wraps the value in the top-level whitespace, trims dead ends and
// builds the Grammar.
func (c *schemaCompiler) finish(v *Vocabulary, value int32) (*Grammar, error) {
	if v == nil {
		return nil, errors.New("grammar: no vocabulary")
	}
	n := c.n
	top := n.add()
	var parts []frag
	lead := c.gap()
	if c.after != "" {
		// Reasoning models leave a blank line after the think block
		// ("</think>\n\n"): one more line break is allowed there.
		parts = append(parts, c.reasoningFirst(v), n.opt(n.alt(n.lit("\n"), n.lit("\r\n"))))
	}
	parts = append(parts, lead, n.call(value), c.gap())
	if c.suffix != "" {
		first := int32(len(n.st))
		parts = append(parts, n.lit(c.suffix))
		for i := first; i < int32(len(n.st)); i++ {
			n.st[i].literal = true
		}
	}
	c.finishSub(top, n.seq(parts...))
	if !n.trim(top) {
		return nil, &SchemaError{Param: c.param, Message: errEmpty.Error()}
	}
	return newGrammar(v, n, top, c.warnings), nil
}

// reasoningFirst is the free text before the value: everything up to and
// including the first After (special and added tokens allowed), optional
// behind AfterOpen when that is set. The opening itself is not a literal
// part, so at the first token special tokens stay refused unless they
// spell the opening: the value may start there.
func (c *schemaCompiler) reasoningFirst(v *Vocabulary) frag {
	n := c.n
	first := int32(len(n.st))
	free := n.upTo(c.after)
	for i := first; i < int32(len(n.st)); i++ {
		n.st[i].literal = true
	}
	if c.afterOpen == "" {
		return free
	}
	return n.opt(n.seq(c.opening(v, c.afterOpen), free))
}

// opening matches text as plain text, or with the special and added
// tokens of v that spell parts of it ("<think>", harmony's "<|channel|>"
// and "<|message|>") as those tokens.
func (c *schemaCompiler) opening(v *Vocabulary, text string) frag {
	n := c.n
	var texts []string
	for _, l := range v.literals {
		if len(l.piece) > 0 && strings.Contains(text, string(l.piece)) {
			texts = append(texts, string(l.piece))
		}
	}
	if len(texts) == 0 {
		return n.lit(text)
	}
	ps := resolveMarkers(v, texts).split(text)
	if slices.ContainsFunc(ps, func(p part) bool { return p.eos }) {
		return n.lit(text) // the engine would end the text on that token
	}
	return n.alt(n.lit(text), c.parts(ps))
}

// Compiler compiles schemas against one Vocabulary and caches the result
// by schema text and options, so a repeated schema (the same tool on every
// request) costs a map lookup, and its grammar stays warm. It is safe for
// concurrent use.
type Compiler struct {
	vocab *Vocabulary
	limit int

	mu    sync.Mutex
	cache map[cacheKey]*Grammar
	order []cacheKey
}

type cacheKey struct {
	schema string
	opts   Options
}

// ToolCalls compiles a tool-call grammar, or returns the cached one for
// the same tools and options (see CompileToolCalls).
func (c *Compiler) ToolCalls(tools []Tool, o CallOptions) (*Grammar, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v", o)
	for _, t := range tools {
		fmt.Fprintf(&b, "\x00%q %q %v %q", t.Name, t.Parameters, t.Strict, t.Param)
	}
	k := cacheKey{schema: b.String(), opts: Options{Param: "\x00tools"}}
	c.mu.Lock()
	g, ok := c.cache[k]
	c.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := CompileToolCalls(c.vocab, tools, o)
	if err != nil {
		return nil, err
	}
	return c.put(k, g), nil
}

// put caches g under k, dropping the oldest entry past the limit.
func (c *Compiler) put(k cacheKey, g *Grammar) *Grammar {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.cache[k]; ok {
		return old
	}
	if len(c.order) >= c.limit {
		delete(c.cache, c.order[0])
		c.order = c.order[1:]
	}
	c.cache[k] = g
	c.order = append(c.order, k)
	return g
}

// NewCompiler returns a Compiler for v that keeps up to limit grammars
// (oldest dropped first; limit <= 0 means 128).
func NewCompiler(v *Vocabulary, limit int) *Compiler {
	if limit <= 0 {
		limit = 128
	}
	return &Compiler{vocab: v, limit: limit, cache: map[cacheKey]*Grammar{}}
}

// Vocabulary returns the vocabulary grammars are compiled against.
func (c *Compiler) Vocabulary() *Vocabulary { return c.vocab }

// Schema compiles schema, or returns the cached grammar for the same
// schema text and options. Errors are not cached.
func (c *Compiler) Schema(schema []byte, o Options) (*Grammar, error) {
	k := cacheKey{string(schema), o}
	c.mu.Lock()
	g, ok := c.cache[k]
	c.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := CompileSchema(c.vocab, schema, o)
	if err != nil {
		return nil, err
	}
	return c.put(k, g), nil
}

// JSONObject returns the JSON-mode grammar for o (see JSONObject),
// compiled once per options.
func (c *Compiler) JSONObject(o Options) (*Grammar, error) {
	k := cacheKey{opts: Options{Param: "\x00json", Suffix: o.Suffix, After: o.After, AfterOpen: o.AfterOpen}}
	c.mu.Lock()
	g, ok := c.cache[k]
	c.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := JSONObject(c.vocab, o)
	if err != nil {
		return nil, err
	}
	return c.put(k, g), nil
}
