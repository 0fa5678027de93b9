// Package sse writes Server-Sent Events for the reference server's streams:
// data-only events for chat and text completions (ending with
// "data: [DONE]"), and named events ("event: response.output_text.delta")
// for the Responses API. Every event is written with one Write and flushed
// at once, so a client sees each token when it is generated.
//
// The writer allocates nothing per event: the caller appends the payload
// (for the hot path, wire.ChunkEncoder) and the writer frames it in a
// buffer it reuses. A failed write is sticky — every later call returns the
// same error — so a generation loop stops on the first token it cannot
// deliver (a client that went away; spec P13).
package sse
