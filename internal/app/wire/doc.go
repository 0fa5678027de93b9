// Package wire is the OpenAI-compatible HTTP wire format of the reference
// server: the request, response and streaming types of POST
// /v1/chat/completions, POST /v1/completions, POST /v1/responses and GET
// /v1/models, their strict decoders, and the error body.
//
// Decoding is strict where OpenAI is strict: a request body is at most
// MaxBodyBytes, must be one JSON object in valid UTF-8, and an unknown
// top-level parameter is refused with code unknown_parameter and the
// parameter's name in Param. Inside messages, content parts and input items,
// fields Prism does not read are tolerated (clients echo back whole response
// objects there, with keys such as annotations or refusal). A known
// parameter whose value Prism cannot honour (n > 1, logit_bias, audio
// output, image input, store: true on the stateless Responses API, ...) is
// refused with code unsupported_parameter rather than ignored: a request is
// never answered differently from what it asked without saying so.
//
// Every decoding and validation failure is an *Error carrying the HTTP
// status, the spec's code and the JSON path of the field at fault
// ("messages[2].content[0].text"), so the server answers before any header
// is sent (spec I3) with the {"error": {...}} body ErrorBody describes.
//
// Sampling ranges (temperature, top_p, penalties) are not checked here: the
// engine is the one place that knows them and returns its own
// InvalidRequestError with the same OpenAI parameter names. tool_choice is
// carried as raw JSON for the tools package, which owns its shapes (spec
// P14).
//
// The hot path of a stream — one content delta chunk per token — has an
// append-based encoder, ChunkEncoder, that allocates nothing per token.
package wire
