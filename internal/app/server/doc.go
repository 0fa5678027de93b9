// Package server is the HTTP handler of the OpenAI-compatible reference
// server (examples/serve): routing, the safe defaults of spec I5 (API key,
// loopback Host check, CORS only when asked, body cap) and the chat
// completion path over the engine Manager, the chat template, the
// reasoning splitter and the tool-call parser — or, for Ollama's models,
// over engine/ollama, behind the same backend interface and without the
// Manager's lock (spec I2). The stateless Responses API (POST
// /v1/responses) shares that path: its requests are planned as chat
// requests and only their output items and events differ.
//
// Everything that can fail — decoding, the model name, the template, the
// queue, the model load, the context length and Ollama's first chunk — is
// resolved before the
// first byte of a response is written (spec I3), so every such failure is a
// JSON error with its own status and code.
package server
