// Package reasoning separates a model's thinking from its answer, for whole
// texts and for token streams.
//
// A [Splitter] takes generated text in pieces of any size — a piece may end
// inside a tag or inside a multi-byte UTF-8 character — and hands back typed
// [Piece] values: [Reasoning] for text inside a think block, [Content] for the
// rest. Tags never reach the output. The splitter holds back at most the
// bytes of a tag that has begun but not finished (and the bytes of a
// character that has begun but not finished), so its lookahead is never
// longer than the longest tag. In steady state Feed does not allocate.
//
// Two families of markers are understood:
//
//   - think tags (the default, "<think>" and "</think>", as Qwen3 and
//     DeepSeek-R1 emit them; other tags through [WithTags]);
//   - gpt-oss harmony channels ([WithHarmony]): the analysis channel is
//     reasoning, the final channel and commentary without a recipient are
//     content, and messages addressed to a recipient (tool calls) are passed
//     through verbatim as content so a tool-call parser can read them.
//
// [PromptOpensReasoning] (or the [WithPrompt] option) detects prompts whose
// generation prompt already opens the think block — Qwen3 thinking templates,
// DeepSeek-R1 with thinking forced open — so the first generated text is
// reasoning. [Split] splits a whole text the same way the streaming splitter
// does, and [FromOllama] maps an Ollama message's thinking and content fields
// to the same [Result].
//
// Spec: P7 (reasoning content separation: reasoning_content in messages and
// stream deltas, an unclosed think block is all reasoning, no think block
// means no reasoning field, a lookahead buffer for split tags, Ollama
// thinking, reasoning beside tool calls). The tools package combines this
// splitter with tool-call parsing.
package reasoning
