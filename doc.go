// Package prism is the front door of Prism, an embeddable Go library that
// runs local LLMs on ONNX Runtime: Open takes a model folder and returns a
// ready *engine.Engine.
//
// Open does what the spec asks of every load: lock → check → load (P2, P3)
// — the machine-wide load lock from package lock, the RAM/VRAM budget from
// package resources (P1; a refused load never reaches the runtime), then
// the graph through engine/onnx on the device asked for, reported honestly
// (I1: "cuda" fails naming the cause; "auto" runs on the CPU where no NVIDIA
// GPU is, and where one is that the runtime cannot use it warns, falls back
// and Engine.Info().FallbackReason keeps why), and the tokenizer through
// engine/tokenizer. WithThreads sets the intra-op threads (P6) and
// WithPrefillChunk the prefill chunk. The lock is released before Open
// returns, so it is never held while generating.
//
// Open reads no environment unless asked: WithEnv(os.Environ()) applies the
// PRISM_* settings (spec P15), read once and validated as a whole, under
// the options given.
//
// LoadChat reads the same folder's chat templates and returns its
// templates.Chat, the one way to render the model's prompts (I7, P11).
//
// The packages it bundles — engine, templates, tools, reasoning, signals,
// lock, resources — are usable on their own.
package prism
