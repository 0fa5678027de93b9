// Package tokenizer reads a model folder's Hugging Face tokenizer files
// (tokenizer.json and tokenizer_config.json) and turns text into token ids and
// back, in pure Go.
//
// It supports the components real chat models ship with: BPE models, both
// byte-level (GPT-2 style, e.g. Qwen3, Llama 3.1, DeepSeek-V3, gpt-oss) and
// sentencepiece style with "▁" and byte fallback (Llama 2, Gemma 3); the
// NFC/NFD/NFKC/NFKD, Prepend, Replace, Strip and Sequence normalizers; the
// Split (with the families' look-ahead regexes as hand-written scanners),
// ByteLevel, Metaspace, Digits, WhitespaceSplit and Sequence pre-tokenizers;
// added and special tokens matched before pre-tokenization; the
// TemplateProcessing, ByteLevel and Sequence post-processors; and the
// ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip and Sequence
// decoders. Anything else is a load error naming the component, never a
// silent approximation.
//
// Results are token-for-token identical to the reference implementation
// (Hugging Face tokenizers as shipped in transformers.js 4.x); the tests prove
// it on six real model families against vectors the reference produced.
//
// A Tokenizer is immutable after Load and safe for concurrent use. A
// StreamDecoder turns ids into text one at a time, emitting only complete
// UTF-8, for streaming responses.
//
// Spec items upheld: Load failures are typed errors with the spec's code
// model_load_failed, raised while loading, so servers resolve them before any
// response header (I3); a component that is not implemented is a load error
// naming it, never a silent approximation (the design's "no silent
// fallback"). Behaviour on invalid UTF-8 and how parity is proven are
// described in docs/tokenizer.md.
package tokenizer
