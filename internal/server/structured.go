package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/tools"
)

// constraintInput is what the constraint of a chat answer depends on.
type constraintInput struct {
	dir      string
	format   *wire.ResponseFormat
	narrowed tools.Narrowed
	parallel bool
	prompt   string // the rendered prompt, before any forced text
	// open and until leave the model's reasoning free before the
	// constrained answer (reasoning.AnswerStart; CallStart with tools).
	open, until string
}

// constraint compiles what a chat answer must follow for the model in
// dir: the response_format, the calls tool_choice demands, or, with tools
// offered under "auto", a lazy grammar that constrains a call from its
// opening on; nil when the answer is free. It runs before the model is
// used, so a schema that cannot be enforced is a 400 before any byte
// (spec I3). docs/structured-outputs.md describes the combinations.
func (s *Server) constraint(in constraintInput) (engine.Constraint, error) {
	wantsFormat := in.format != nil && in.format.Type != "" && in.format.Type != "text"
	if len(in.narrowed.Tools) == 0 {
		if !wantsFormat {
			return nil, nil
		}
		return s.formatConstraint(in)
	}
	sx, ok := in.narrowed.Format.Syntax()
	if !ok {
		if wantsFormat {
			return nil, &apiError{status: http.StatusBadRequest, code: wire.CodeUnsupportedParameter, param: "response_format",
				message: fmt.Sprintf("response_format together with tools is not served for the %s tool-call format: send one or the other", in.narrowed.Format)}
		}
		return nil, nil // no known call syntax: calls cannot be constrained (docs/structured-outputs.md)
	}
	c, err := s.compiler(in.dir)
	if err != nil {
		return nil, err
	}
	ts, err := grammarTools(in.narrowed)
	if err != nil {
		return nil, err
	}
	o := grammar.CallOptions{Syntax: callSyntax(sx), Parallel: in.parallel}
	if in.narrowed.MustCall() {
		// A demanded call has no content, so response_format does not
		// apply. The grammar writes the call after the model's reasoning,
		// or after the opening forced into the prompt.
		if callAfterReasoning(in.narrowed, in.until) {
			o.AfterOpen, o.After = in.open, in.until
		} else {
			o.Written = in.narrowed.Forced
		}
	} else {
		o.Lazy = true
		if in.narrowed.Format != tools.FormatHarmony || wantsFormat {
			// Harmony's free text holds its analysis messages already;
			// with a response format the answer is the value or calls, so
			// the analysis message is left free before them.
			o.AfterOpen, o.After = in.open, in.until
		}
		if wantsFormat {
			o.Content, o.ContentParam = []byte(`{"type":"object"}`), "response_format"
			if in.format.Type == "json_schema" {
				o.Content, o.ContentParam = in.format.JSONSchema.Schema, "response_format.json_schema.schema"
			}
		}
	}
	g, err := c.ToolCalls(ts, o)
	if err != nil {
		return nil, err
	}
	for _, w := range g.Warnings() {
		s.log.Warn("tool parameters keyword not enforced (send function.strict true to refuse it)", "warning", w.String())
	}
	return g, nil
}

// callSyntax is the grammar's copy of a format's call syntax.
func callSyntax(sx tools.Syntax) grammar.CallSyntax {
	return grammar.CallSyntax{Trigger: sx.Trigger, Begin: sx.Begin, End: sx.End, Open: sx.Open, Close: sx.Close, Sep: sx.Sep,
		ArgsKey: sx.ArgsKey, WholeAnswer: sx.WholeAnswer, Tokens: sx.Tokens, NameEnd: sx.NameEnd, Guard: sx.Guard, ContentBegin: sx.ContentBegin}
}

// formatConstraint compiles response_format alone.
func (s *Server) formatConstraint(in constraintInput) (engine.Constraint, error) {
	c, err := s.compiler(in.dir)
	if err != nil {
		return nil, err
	}
	o := grammar.Options{AfterOpen: in.open, After: in.until}
	if in.format.Type == "json_object" {
		g, err := c.JSONObject(o)
		if err != nil {
			return nil, fmt.Errorf("json mode: %w", err)
		}
		return g, nil
	}
	o.Strict, o.Param = true, "response_format.json_schema.schema"
	g, err := c.Schema(in.format.JSONSchema.Schema, o)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// callAfterReasoning reports whether a call that tool_choice demands is
// left to the grammar, after the reasoning the model may write first
// (until, from reasoning.CallStart), instead of forcing its opening into
// the prompt, which would leave no room to think. It needs a grammar for
// the call format.
func callAfterReasoning(n tools.Narrowed, until string) bool {
	if until == "" {
		return false
	}
	_, ok := n.Format.Syntax()
	return ok
}

// grammarTools reads the offered tools' names, parameter schemas and
// strict flags. A tool's schema compiles strict only when its function
// says strict: true; otherwise what the grammar cannot enforce is logged
// and left out, as it was before calls were constrained.
func grammarTools(n tools.Narrowed) ([]grammar.Tool, error) {
	out := make([]grammar.Tool, len(n.Tools))
	for i, raw := range n.Tools {
		var t struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Strict     *bool           `json:"strict"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidRequest, param: "tools", message: fmt.Sprintf("tools[%d]: %v", i, err)}
		}
		param := fmt.Sprintf("tools[%d].function.parameters", i)
		if n.Choice.Mode == tools.ChoiceFunction {
			param = "tools" // narrowed to the named tool: its index is not kept
		}
		params := t.Function.Parameters
		if string(params) == "null" {
			params = nil
		}
		out[i] = grammar.Tool{Name: t.Function.Name, Parameters: params, Strict: t.Function.Strict != nil && *t.Function.Strict, Param: param}
	}
	return out, nil
}

// compiler returns the grammar compiler of the model in dir, built once
// from its tokenizer.
func (s *Server) compiler(dir string) (*grammar.Compiler, error) {
	tok, err := s.tokenizer(dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.compilers[dir]; ok {
		return c, nil
	}
	v, err := grammar.NewVocabulary(tok)
	if err != nil {
		return nil, fmt.Errorf("structured outputs for %s: %w", dir, err)
	}
	c := grammar.NewCompiler(v, 0)
	s.compilers[dir] = c
	return c, nil
}
