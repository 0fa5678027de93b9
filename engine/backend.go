package engine

import "context"

// Backend is a loaded model as a runtime serves it: one forward step at a
// time over a cache it owns. Backends (engine/onnx, the fakes in
// engine/enginetest) implement it; engine/ollama does not, since Ollama
// samples in its own process and answers whole. Engine adds tokenization,
// sampling, stops, chunked prefill, prefix reuse and accounting on top, the
// way database/sql adds pooling on top of database/sql/driver.
//
// A Backend is used by one goroutine at a time; Engine serialises calls.
type Backend interface {
	// Info reports static facts about the loaded model.
	Info() ModelInfo

	// Reserve prepares the cache to hold n positions (prompt plus the
	// request's max_tokens). It is called before the first Forward of a
	// request, and again with a larger n during a request that gave no
	// max_tokens (the engine reserves prompt+512 first, then doubles).
	// Positions already cached below n are kept.
	Reserve(n int) error

	// Forward runs ids at positions [pos, pos+len(ids)), reusing the cached
	// positions below pos and discarding any cached at or above pos. It
	// returns the logits of the last position (VocabSize values), valid only
	// until the next call. Cancelling ctx abandons the step.
	Forward(ctx context.Context, ids []int32, pos int) ([]float32, error)

	// Close releases everything the backend holds. It is idempotent.
	Close() error
}

// ModelInfo describes a loaded model.
type ModelInfo struct {
	// ID names the model as the caller asked for it (a folder or catalog name).
	ID string
	// Device is the execution provider actually in use, e.g. "cpu" or "cuda".
	Device string
	// FallbackReason is why a requested device was not used ("" when it was).
	FallbackReason string
	// VocabSize is the length of the logits Forward returns.
	VocabSize int
	// ContextLength is the largest number of positions the model accepts.
	ContextLength int
	// EOS holds every end-of-sequence token id (several are normal).
	EOS []int32
	// Variant is the dtype variant of the graph in use, named as
	// transformers.js names its dtypes ("fp32", "q4", ...); "" when the
	// folder's graph carries none.
	Variant string
	// KVCache names the KV cache strategy in use ("shared-buffer",
	// "present-to-past-padded", "present-to-past"), "" for backends
	// without one.
	KVCache string
	// KVCacheReason says why that strategy: what the folder and the graph
	// allow, and whether a faster one failed its proof on the graph.
	KVCacheReason string
	// Defaults are the generation settings the model folder recommends;
	// the engine applies them where a Request leaves a field unset.
	Defaults SamplingDefaults
}
