// Package engine turns a loaded model into streaming text generation and
// arbitrates access to it: one stream at a time, or several decoded
// together in batches.
//
// A Backend (engine/onnx, engine/enginetest) runs one forward step over a
// cache it owns. Engine adds the rest: tokenization, chunked prefill
// (WithPrefillChunk, default 1024), prefix reuse across requests,
// sampling (greedy, temperature, top_k, top_p, min_p, seed, repetition,
// frequency and presence penalties), stop handling (EOS ids, stop strings
// matched across token boundaries and never emitted, max_tokens), the loop
// guard (WithLoopGuard) and usage and timing accounting. Stream yields
// tokens without a heap allocation per token.
//
// Request.Logprobs and Request.TopLogprobs ask for each generated token's
// log-probability and the most likely alternatives (Token.Logprob,
// Token.TopLogprobs). They are the model's own distribution: the
// log-softmax of the raw logits, before penalties, temperature, filters and
// a constraint's mask, as the OpenAI API and vLLM report it, so the value
// does not depend on how the token was chosen. Off, they cost one branch
// per token.
//
// Speculative decoding (prompt lookup): where the backend is a Verifier
// whose proof at load passed (ModelInfo.Speculation), the engine drafts
// the next tokens from n-grams of the prompt and the text so far, verifies
// a draft in one step, and picks every accepted token exactly as it would
// alone, so greedy output is unchanged and sampling keeps its
// distribution. Request.NoSpeculation and WithSpeculation(false) turn it
// off; Result.Speculation counts it.
//
// Batched decoding: WithMaxBatch(n) above 1, over a backend that is a
// Batcher whose proof at load passed (ModelInfo.Batch), runs up to n
// streams at once. Each is prefilled alone and admitted to a slot; one
// scheduler goroutine per engine makes every backend call and decodes
// the admitted streams' next tokens in one step, so greedy output is the
// same batched or alone. Speculation is off while batching. Otherwise the
// engine runs one stream at a time.
//
// The package reads no environment: every setting is an option whose zero
// value works, and the PRISM_* variables reach it from the edge (spec P15).
//
// Manager keeps one resident model behind one lock (spec I2): loading and
// generation are serialised (an engine that decodes in batches takes up
// to its MaxBatch leases at once; loads and unloads stay exclusive),
// waiters are served in arrival order from a bounded queue (WithMaxQueue,
// WithQueueTimeout → server_busy), a waiter whose client is gone leaves
// the queue at once (P9), and Unload frees the model once the running
// generations end (P8).
//
// Errors carry the spec's codes (model_load_failed, context_length_exceeded,
// invalid_request_error, server_busy, client_disconnected) through the Coder
// interface; match them with errors.As or read them with errcode.Of, which
// reads the codes of every Prism package's errors.
//
// Spec items upheld here: I1 (the device reported is the backend's), I2,
// I4 (pure Go, no cgo), I8 (engine/enginetest fakes), the failure-mode rows
// for context_length_exceeded, the loop guard, chunked prefill, server_busy
// and client disconnects, P8 and P9.
package engine
