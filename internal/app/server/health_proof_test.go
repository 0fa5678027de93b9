//go:build cgo

package server_test

import (
	"testing"
)

// GET /health reports the resident model's KV cache strategy, prefill
// mode and speculative decoding with what the proofs at load found
// (docs/onnx.md).
func TestHealthReportsTheProofs(t *testing.T) {
	qs := startOn(t, qaModels.Path(t), nil, nil, nil)
	qs.serves(t, "hello")
	var h struct {
		Model         string `json:"model"`
		KVCache       string `json:"kv_cache"`
		KVCacheReason string `json:"kv_cache_reason"`
		Prefill       string `json:"prefill"`
		PrefillReason string `json:"prefill_reason"`
		Speculation   string `json:"speculation"`
		SpecReason    string `json:"speculation_reason"`
	}
	getJSON(t, qs, "/health", &h)
	if h.Model == "" || h.KVCache == "" || h.KVCacheReason == "" || h.Prefill != "chunked" || h.PrefillReason == "" ||
		h.Speculation != "prompt-lookup" || h.SpecReason == "" {
		t.Fatalf("health %+v", h)
	}
	t.Logf("%+v", h)
}
