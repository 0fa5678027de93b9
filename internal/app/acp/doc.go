// Package acp is Prism's Agent Client Protocol agent (protocol version 1)
// over stdio: the engine of examples/acp (spec P16, Phase 12 and 13).
//
// An Agent answers initialize, session/new, session/set_config_option,
// session/prompt and session/cancel. A prompt streams agent_thought_chunk
// and agent_message_chunk updates, runs at most MaxToolRounds rounds of
// read_file and write_file calls — every byte through the client's
// fs/read_text_file and fs/write_text_file, a write only after
// session/request_permission — and ends with a usage_update. Each prompt is
// the root of its own execution tree (PLAT-095, package signals) whose
// children are its tool calls; the prompt is answered only when the tree is
// complete.
//
// I9: the agent opens no user file and starts no process; generation goes
// through a Generator (the reference server over HTTP, or its handler in
// process).
package acp
