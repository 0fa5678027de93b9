// Package templates renders a model's Hugging Face chat template into the
// prompt text the model expects, sandboxed, with the built-in format as
// the fallback where the spec allows one.
//
// A Chat, built once per model (NewChat) from the templates and special
// tokens the model folder declares, is the one way to render a prompt:
// its Render picks the template, fills the special tokens, renders in the
// sandbox (once more with "" for the null message contents a template
// fails on, reported in Prompt.NullAsEmpty) and applies the spec's
// fallback rule.
//
// Templates are parsed by the Jinja engine github.com/nikolalohinski/gonja/v2
// and evaluated by this package's own evaluator over gonja's parse tree,
// the only renderer; a template that uses a construct it does not cover is
// refused when it is loaded, naming the construct and its line. The
// dialect is the chat-template one: raise_exception,
// strftime_now, namespace(), loop variables, slicing, the str and dict
// methods templates call, and tojson with Python json.dumps formatting
// that keeps the caller's key order — tools and tool-call arguments reach
// the prompt in the order they had in the request body. Renders are
// byte-identical to the reference renderer (@huggingface/jinja, behind
// transformers.js apply_chat_template) on the kept cases for the Qwen3,
// Llama-3.1, Gemma-3 and DeepSeek-V3 templates; see docs/templates.md.
//
// Spec items upheld:
//
//   - I7: templates are sandboxed. No template can load another (include,
//     import, extends fail); a render is bounded in output size, steps,
//     macro nesting, range() length and time (Limits). A template that
//     fails or is blocked is logged with the model id and the cause and,
//     without tools, replaced by the built-in format (Chat.Render, which
//     reports it in the Prompt).
//   - P11: with tools, a failed template is a *TemplateRenderError with
//     code template_render_failed naming the model and the cause — never a
//     prompt that silently lost its tools.
//   - P14: SupportsTools is a structural check: the template uses the
//     tools variable inside a Jinja expression or statement, not in prose
//     or comments.
package templates
