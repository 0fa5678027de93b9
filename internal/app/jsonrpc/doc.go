// Package jsonrpc is the JSON-RPC 2.0 framing of Prism's stdio agents: one
// JSON object per line in each direction, both peers sending requests.
//
// A Conn reads frames on one goroutine (Serve) and hands requests and
// notifications to a handler in arrival order; the handler decides what runs
// in the background. Responses to the agent's own requests (Call) wake the
// waiting caller, and when the input ends every pending Call fails with
// ErrClosed, so nothing waits for a reply that cannot come.
//
// It never crashes on its input (spec P16): a line that is not JSON, not an
// object, nested deeper than MaxDepth or longer than MaxLine is dropped with
// a notice on the log; a broken output is logged once and every later
// write is dropped. Codes follow JSON-RPC 2.0: -32600 invalid request,
// -32601 method not found, -32602 invalid params, -32603 internal error.
package jsonrpc
