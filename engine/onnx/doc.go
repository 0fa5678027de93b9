// Package onnx runs decoder-only language models on ONNX Runtime through
// github.com/yalue/onnxruntime_go; it is the only package in Prism that
// imports the binding, and the only one besides resources that needs cgo.
// A build without cgo still compiles: Open then fails with ErrNoCgo.
//
// Open reads a model folder in either layout real exports use — the
// onnxruntime-genai builder's genai_config.json beside its graph, or Hugging
// Face optimum's config.json, generation_config.json and onnx/model.onnx or
// one of its dtype variants (Options.Variant; internal/modelfolder finds the
// files) — and takes names, element types (float32/float16 cache and logits,
// int64/int32 ids, mask and positions) and the presence of position_ids
// from the graph itself. The result implements engine.Backend.
//
// Device honesty (spec I1): DeviceCUDA either runs on the CUDA execution
// provider or fails with a *DeviceError naming the cause (such as the
// missing provider library); it never runs the model on the CPU instead,
// though ONNX Runtime places nodes the CUDA provider declines on its CPU
// provider unless Options.StrictCUDA forbids it. DeviceAuto
// tries CUDA and, when that fails, logs a warning with the cause, runs on
// the CPU and keeps the cause in ModelInfo.FallbackReason. ModelInfo.Device
// is the provider actually in use. Options.Threads is PRISM_THREADS (P6):
// the intra-op thread count.
//
// The KV cache lives outside the Go heap and is sized by Reserve to what a
// request needs. Models built on GroupQueryAttention with
// past_present_share_buffer share one buffer between past and present; all
// others hand each step's present outputs over as the next step's past
// inputs without copying. docs/onnx.md describes both, and the one piece of
// package-level state the binding forces (the process-wide runtime).
//
// With Options.MaxBatch above 1 the backend is also an engine.Batcher:
// sequences prefilled alone are admitted to slots of a batch cache, each
// row right-aligned in a common past with its leading columns masked, and
// decoded together, one token each per runtime step, on graphs whose proof
// at load shows that every row gets the logits it gets alone; others
// report Batch "serial" with the reason (docs/onnx.md, "Batched decoding").
package onnx
