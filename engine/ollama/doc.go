// Package ollama is a client for Ollama's HTTP API: the models it has
// (GET /api/tags), chat streamed as NDJSON (POST /api/chat) and embeddings
// (POST /api/embed).
//
// Chat resolves the first chunk of the answer before it returns, so an
// unreachable Ollama, an unknown model or a refused request is an error of
// the call and not of the stream (spec I3: the server turns it into a JSON
// error before any header is sent). Every error is an [*Error] carrying a
// code of package errcode: backend_unavailable for a daemon that cannot be
// reached, answers 5xx or breaks off mid-stream; model_not_found for a
// model Ollama does not have; invalid_request_error and
// tools_not_supported for requests Ollama refuses.
//
// [Events] maps the chunks to the same events package tools gives for ONNX
// generation: message.thinking and <think> tags inside message.content both
// become reasoning (spec P7, through the reasoning package's splitter), and
// Ollama's whole tool calls become OpenAI-style call deltas.
//
// Ollama runs its own models in its own process: nothing here takes the
// engine lock of package engine (spec I2).
package ollama
