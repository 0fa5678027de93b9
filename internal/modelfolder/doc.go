// Package modelfolder is the one reader of a model folder's layout: which
// layout it is in (onnxruntime-genai or Hugging Face optimum /
// transformers.js), which decoder graph loads and with which external data
// files, which dtype variants sit beside it, where the config and tokenizer
// files are, and which chat template applies. Every package that needs one
// of these facts asks here, so the memory budget measures the graph the
// runtime loads and every renderer sees the same template.
//
// The package finds files and decides precedence; the contents of
// genai_config.json, config.json and tokenizer.json are interpreted by the
// packages that use them.
package modelfolder
