// Package grammar compiles structured-output constraints — a JSON Schema,
// JSON mode (any object) — into grammars over a model's vocabulary, for
// engine.Request.Constraint: before each token the engine asks the
// grammar's matcher which token ids may come next (a bitmask), samples
// among them, and allows EOS only where the text is complete. Output
// generated under a schema is always JSON valid under it.
//
// A schema compiles to a byte-level network (regular parts as automata,
// objects, arrays and $ref as calls, so recursive schemas work) run by a
// lazy DFA; a Vocabulary arranges the tokens' decoded bytes in a trie, and
// a mask is one walk of the trie that skips every subtree whose first byte
// the grammar refuses. Masks are cached per DFA state, so a warmed grammar
// answers a step by copying a bitmask. Compiled grammars are cached by
// schema text in a Compiler.
//
// Keywords the grammar cannot enforce are never silently ignored: with
// Options.Strict the compile fails with a *SchemaError naming the keyword
// (code invalid_request_error, for a 400 with its param); without it they
// are listed in Grammar.Warnings. docs/structured-outputs.md lists what is
// supported, the whitespace bound and the known limits.
//
// Spec items upheld: errors before headers (I3: a schema fails at compile
// time, before any token), the design's "no silent fallback" (warnings
// for what is not enforced).
package grammar
