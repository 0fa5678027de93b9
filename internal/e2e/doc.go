// Package e2e holds end-to-end tests that cross package boundaries the way a
// server does: a model folder written by internal/onnxgen, loaded by
// prism.Open on the real ONNX Runtime, prompted through the model's real chat
// template, its stream split by reasoning and parsed by tools. It has no
// code of its own.
package e2e
