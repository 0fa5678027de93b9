// Package backend is how the MCP server and the ACP agent generate: a
// streaming client of the reference server's OpenAI-compatible API
// (PRISM_BASE_URL, PRISM_API_KEY), and, when that server is unreachable,
// the chat layer of package prism called in this process (prism.EngineChat
// over an engine.Manager whose loader is prism.Open) — so the fallback
// takes the same cross-process load lock and resource budget, and renders,
// constrains and parses exactly as the server does, with no HTTP in
// between. Every fallback is reported to the caller (Result.Warnings) and
// logged.
//
// Neither path reads or writes the user's files (I6, I9): the in-process
// chat layer only opens model folders, as the reference server does.
package backend
