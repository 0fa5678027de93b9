// Package scripted writes folders of scripted models for end-to-end tests:
// each model says one fixed answer, whatever it is asked, through the real
// ONNX graph internal/onnxgen writes, with a real tokenizer and chat
// template (Qwen3's, from internal/fixtures), so a test that drives a
// server, an agent or a browser knows what must arrive.
//
// A Folder is declared once in a test package, written on first use and
// removed by TestMain; a Writer writes single models into it, for what a
// package builds on the plain ones (a variant with one file changed, a
// model whose script is a prompt its template renders).
//
// The package is internal test support, not part of Prism's API.
package scripted
