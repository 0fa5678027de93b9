// Package mcpserver is the MCP server of examples/mcp, on the official Go
// SDK (github.com/modelcontextprotocol/go-sdk): the generation tools
// (generate, list_models, status, benchmark) over internal/app/backend, and the
// signals verbs (prism_start, prism_checkpoint, prism_wrap,
// prism_signals_pending, prism_send_signal, prism_status, hd_exec) over a
// signals.Router with their piggyback rules (SPEC-037 §1, SPEC-041 §1,
// ADR-25). It serves stdio and streamable HTTP; over HTTP a request of the
// stateless 2026-07-28 protocol goes to the SDK's stateless handler and
// every other to its session handler, so one URL serves both eras.
//
// No tool reads or writes the user's files (I6): the tools take text and
// return text; only model folders and the signals store are opened.
// Idle tracks tools/call activity for PRISM_MCP_AUTO_STOP_SEC (P10).
package mcpserver
