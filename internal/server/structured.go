package server

import (
	"fmt"
	"net/http"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/internal/wire"
	"github.com/prism-local/prism/reasoning"
)

// constraint compiles a request's response_format for the model in dir;
// nil for text. It runs before the model is used, so a schema that cannot
// be enforced is a 400 before any byte (spec I3).
func (s *Server) constraint(dir string, f *wire.ResponseFormat, offersTools bool, prompt string, ro []reasoning.Option) (engine.Constraint, error) {
	if f == nil || f.Type == "" || f.Type == "text" {
		return nil, nil
	}
	if offersTools {
		return nil, &apiError{status: http.StatusBadRequest, code: wire.CodeUnsupportedParameter, param: "response_format",
			message: "response_format together with tools is not served yet: send one or the other"}
	}
	c, err := s.compiler(dir)
	if err != nil {
		return nil, err
	}
	if f.Type == "json_object" {
		g, err := c.JSONObject()
		if err != nil {
			return nil, fmt.Errorf("json mode: %w", err)
		}
		return g, nil
	}
	o := grammar.Options{Strict: true, Param: "response_format.json_schema.schema"}
	if reasoning.PromptOpensReasoning(prompt, ro...) {
		// The template left a think block open: the value follows its closing.
		_, o.After = reasoning.Tags(ro...)
	}
	g, err := c.Schema(f.JSONSchema.Schema, o)
	if err != nil {
		return nil, err
	}
	return g, nil
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
