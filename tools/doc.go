// Package tools honours tool_choice and reads tool calls out of generated
// text, for whole answers and for token streams.
//
// [Narrow] applies an OpenAI tool_choice to the tools of a request (spec
// P14): "none" offers no tools, "auto" (or absent) all of them, "required"
// all of them and demands a call, and {"type":"function","function":
// {"name":X}} only X and demands a call of X. The tools stay raw JSON, so
// their key order reaches the chat template untouched. Where a call is
// demanded, [Narrowed].Forced is the text to force at the start of the
// generated answer — the family's tool-call opening, and for a named choice
// the name — so the guarantee holds by construction.
//
// [DetectFormat] picks the tool-call [Format] from a model's chat template:
// Hermes/Qwen <tool_call>, Llama 3.x JSON and <|python_tag|>, Mistral
// [TOOL_CALLS], DeepSeek-V3 tool-call tokens and gpt-oss harmony channels.
// A [StreamParser] takes the generated text in pieces of any size and emits
// [Event] values: reasoning (the reasoning package's splitter runs first),
// content, and OpenAI-style tool-call deltas — the first with index, id,
// type and name, later ones with argument fragments. Opening markers cut
// across pieces never leak into content; text that looks like a call but is
// not valid is handed back as content together with a warning, never
// dropped. [Parse] does the same for a whole answer.
//
// [Schema] checks partial arguments against a tool's JSON schema, the
// building block for sampling arguments that stay inside it.
//
// Spec: P14 (tool_choice), P7 (reasoning beside tool calls), and the
// principle that nothing is silently dropped.
package tools
