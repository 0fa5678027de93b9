package templates

import (
	"errors"
	"fmt"

	"github.com/prism-local/prism/errcode"
)

// CodeTemplateRenderFailed is the spec's error code for a chat template
// that could not render a request that carries tools (P11),
// [errcode.TemplateRenderFailed]. Every error type of this package carries
// it.
const CodeTemplateRenderFailed = errcode.TemplateRenderFailed

// ErrNoTemplate is the cause a Prompt made with the built-in format
// reports when the model has no chat template.
var ErrNoTemplate = errors.New("the model has no chat template")

// TemplateError is a template failing: it would not parse, it uses a
// construct Prism's evaluator does not cover or the sandbox refuses
// (both found when the template is loaded), a render step failed, or the
// template itself raised (raise_exception). Message is the cause as the
// reference renderer words it where the template raised.
type TemplateError struct {
	// Phase is "parse" (when the template is loaded) or "render".
	Phase string
	// Line is the 1-based line of the template's source the failure is
	// at, where the parser knows it (0 otherwise).
	Line int
	// Construct names the construct refused when the template was
	// loaded, e.g. `filter "center"` or `statement "include"` ("" for any
	// other failure).
	Construct string
	// Raised is true when the template called raise_exception; Message is
	// then the template's own message.
	Raised bool
	// Message describes what failed.
	Message string
	// Err is the underlying error, if any.
	Err error
}

// Error describes the failure.
func (e *TemplateError) Error() string {
	if e.Raised {
		return "chat template raised: " + e.Message
	}
	if e.Line > 0 {
		return fmt.Sprintf("chat template %s failed at line %d: %s", e.Phase, e.Line, e.Message)
	}
	return fmt.Sprintf("chat template %s failed: %s", e.Phase, e.Message)
}

// Code returns the spec's code for a failed template,
// "template_render_failed".
func (e *TemplateError) Code() string { return CodeTemplateRenderFailed }

// Unwrap returns the cause.
func (e *TemplateError) Unwrap() error { return e.Err }

// LimitError is a render stopped by the sandbox: it went past a bound
// (output size, steps, call depth) or its context ended.
type LimitError struct {
	// Limit names the bound: "output", "steps", "calls", "range", "size",
	// "deadline".
	Limit string
	// Detail says by how much or why.
	Detail string
	// Err is the context's error for Limit "deadline".
	Err error
}

// Error describes the failure.
func (e *LimitError) Error() string {
	return fmt.Sprintf("chat template blocked by the sandbox (%s): %s", e.Limit, e.Detail)
}

// Unwrap returns the cause.
func (e *LimitError) Unwrap() error { return e.Err }

// Code returns "template_render_failed": a blocked render is a failed one.
func (e *LimitError) Code() string { return CodeTemplateRenderFailed }

// TemplateRenderError is the error a request with tools gets when the
// model's template fails (P11): the built-in format has no place for
// tools, so Prism refuses rather than silently dropping them.
type TemplateRenderError struct {
	// Model is the model id whose template failed.
	Model string
	// Err is the cause: a *TemplateError or *LimitError.
	Err error
}

// Code returns the spec's error code, "template_render_failed".
func (e *TemplateRenderError) Code() string { return CodeTemplateRenderFailed }

// Error describes the failure.
func (e *TemplateRenderError) Error() string {
	return fmt.Sprintf("chat template of model %q cannot render this request with tools: %v", e.Model, e.Err)
}

// Unwrap returns the cause.
func (e *TemplateRenderError) Unwrap() error { return e.Err }
