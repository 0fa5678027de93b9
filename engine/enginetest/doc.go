// Package enginetest provides fakes for tests of code that uses package
// engine, the way net/http/httptest does for HTTP: a scripted Backend and a
// byte-level Tokenizer (no cgo, no model files) from which a real
// *engine.Engine is built, so tests exercise the real Stream semantics —
// stop strings, max_tokens, cancellation, usage — over a model whose output
// is known in advance.
//
// RunConformance is the contract every engine must meet; the same suite runs
// against the fake here and against the ONNX engine over a generated
// scripted model, so the fake cannot drift from the real thing (spec I8:
// hermetic tests use fakes, and the fakes are kept honest).
// RunBatchConformance is the further contract of an engine that decodes
// streams in batches (engine.WithMaxBatch); the fake acts as an
// engine.Batcher when Backend.MaxBatch is 2 or more.
package enginetest
