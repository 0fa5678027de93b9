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
	// Prefill says how prompts go through the model: PrefillChunked ("" is
	// the same) or PrefillWhole, set by a backend whose proof at load found
	// that the graph cannot take a multi-token step on a non-empty past.
	// The engine then runs every prompt in one step from position 0 (within
	// the prefill chunk the memory budget was sized for) and re-prefills
	// instead of reusing a cached prefix.
	Prefill string
	// PrefillReason says what the proof at load found, "" for backends
	// without one.
	PrefillReason string
	// Speculation says whether the engine decodes speculatively
	// (SpeculationPromptLookup) or not (SpeculationOff, and "" for a
	// backend that says nothing, which is off too): set by a backend
	// whose proof at load found that a verify step (Verifier) gives every
	// position the logits of one-token steps and that the cache rolls
	// back past rejected positions. Engine.Info also reports off when the
	// backend has no Verify or WithSpeculation(false) turned it off.
	Speculation string
	// SpeculationReason says why, "" for backends without a proof.
	SpeculationReason string
	// Batch says whether concurrent streams are decoded together
	// (BatchContinuous, up to MaxBatch sequences in one runtime step) or
	// one after another (BatchSerial; "" is the same): set by a backend
	// (Batcher) whose proof at load found that a batched decode step
	// gives every sequence the logits it gets alone. Engine.Info also
	// reports serial when the backend is no Batcher or WithMaxBatch asked
	// for at most 1.
	Batch string
	// BatchReason says why, "" for backends without a proof.
	BatchReason string
	// MaxBatch is how many sequences one decode step takes: the number
	// of streams an Engine runs at once when Batch is BatchContinuous,
	// else 1.
	MaxBatch int
	// Defaults are the generation settings the model folder recommends;
	// the engine applies them where a Request leaves a field unset.
	Defaults SamplingDefaults
}

// The ways a prompt goes through the model (ModelInfo.Prefill).
const (
	// PrefillChunked runs a prompt in chunks of the prefill chunk after
	// the cached prefix it shares with the previous request.
	PrefillChunked = "chunked"
	// PrefillWhole runs every prompt in one step from position 0: the
	// graph cannot take a multi-token step on a non-empty past.
	PrefillWhole = "whole"
)

// The ways the engine decodes (ModelInfo.Speculation).
const (
	// SpeculationPromptLookup drafts tokens from n-grams of the prompt and
	// the text so far and verifies them in one step (docs/onnx.md,
	// "Speculative decoding").
	SpeculationPromptLookup = "prompt-lookup"
	// SpeculationOff decodes one token per step.
	SpeculationOff = "off"
)

// The ways concurrent streams are decoded (ModelInfo.Batch).
const (
	// BatchContinuous decodes up to MaxBatch streams in one runtime step,
	// admitting a new stream at a step boundary (docs/onnx.md, "Batched
	// decoding").
	BatchContinuous = "continuous"
	// BatchSerial runs one stream at a time.
	BatchSerial = "serial"
)

// Batcher is a Backend that decodes several sequences in one runtime step.
// A sequence is prefilled alone with Forward, as without batching, and then
// moved into one of MaxBatch slots with Admit; Decode advances any set of
// admitted slots by one token each in one step. The cache Forward uses
// keeps its positions after Admit, so the next prompt that shares them
// reuses them. The engine uses a Batcher only when ModelInfo.Batch is
// BatchContinuous, and, like every Backend call, from one goroutine at a
// time.
type Batcher interface {
	// Admit moves the positions Forward has cached, [0, n), into slot
	// (0 <= slot < MaxBatch), replacing whatever the slot held. The
	// slot's next Decode runs at position n.
	Admit(slot int) error
	// Decode runs ids[i] at the next position of slots[i], every slot in
	// one step, and returns the logits of each, row after row: row i,
	// VocabSize values from i*VocabSize. They are valid only until the
	// next call. A failed step leaves every slot as it was. Decode makes
	// the room a slot's next position needs itself: Reserve sizes only
	// the cache Forward uses.
	Decode(ctx context.Context, slots []int, ids []int32) ([]float32, error)
	// Drop frees slot; its positions are forgotten.
	Drop(slot int)
}

// Verifier is a Backend that can return the logits of every position of
// a step, the capability speculative decoding needs. The engine uses it
// only when ModelInfo.Speculation is SpeculationPromptLookup.
type Verifier interface {
	// Verify runs ids at positions [pos, pos+len(ids)) exactly as Forward
	// does (positions at and above pos cached before are discarded first)
	// and returns the logits of every position, row after row: row i,
	// VocabSize values from i*VocabSize, predicts the token after ids[i].
	// They are valid only until the next call. The engine rolls a step's
	// rejected positions back by its next Forward or Verify at a lower
	// pos, so a backend proves at load that this gives the logits one-token
	// steps would.
	Verify(ctx context.Context, ids []int32, pos int) ([]float32, error)
}
