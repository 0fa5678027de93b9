// Package onnxgen writes complete model folders of the llama/qwen2 decoder
// family — an ONNX graph with random (or scripted) weights, its external
// weight file, the config files of the HF optimum or onnxruntime-genai
// layout, and optionally a real tokenizer folder — so Prism can be tested
// end to end through ONNX Runtime without downloading any model.
//
// The ONNX protobuf is encoded by hand (proto.go); weights are a pure
// function of the seed, streamed to disk, so a model of a real shape
// (Qwen25Half) is written in bounded memory. Oracle is a pure-Go forward
// pass over the same weights: the tests prove that ONNX Runtime's logits
// match it for prefill and for every cached decode step, in every layout.
//
// A scripted model (Config.Script) emits a fixed token sequence and then EOS
// under greedy decoding whatever the prompt, through the real graph; this is
// how think blocks and tool calls are tested end to end. docs/models.md
// describes the layouts, the flags of `go run ./internal/cmd/mkmodel`, and
// what a scripted model cannot survive.
//
// The package is internal: it is a test and demo tool, not part of Prism's
// API. It serves the design's "Models and fixtures" section (issue 2).
package onnxgen
