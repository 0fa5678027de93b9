//go:build cgo

package onnx

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// formFolder writes a genai folder: genai_config.json with the decoder
// section's extra keys (and the model section's) merged in, and a graph
// of only the signature ins and outs.
func formFolder(t *testing.T, model, decoder map[string]any, ins, outs []onnxgen.Value) string {
	t.Helper()
	dir := t.TempDir()
	dec := map[string]any{"filename": "model.onnx", "head_size": 8, "hidden_size": 16,
		"num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1}
	for k, v := range decoder {
		dec[k] = v
	}
	m := map[string]any{"type": "qwen2", "vocab_size": 64, "context_length": 128, "eos_token_id": 1, "decoder": dec}
	for k, v := range model {
		m[k] = v
	}
	data, err := json.Marshal(map[string]any{"model": m})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "genai_config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := onnxgen.WriteSignature(filepath.Join(dir, "model.onnx"), ins, outs); err != nil {
		t.Fatal(err)
	}
	return dir
}

// decoderSig is the signature of a one-layer decoder, with extra inputs
// and outputs appended and any value of the same name replaced.
func decoderSig(extraIns, extraOuts []onnxgen.Value) ([]onnxgen.Value, []onnxgen.Value) {
	ins := []onnxgen.Value{
		{Name: "input_ids", Type: "int64", Shape: []int64{-1, -1}},
		{Name: "attention_mask", Type: "int64", Shape: []int64{-1, -1}},
		{Name: "past_key_values.0.key", Type: "float32", Shape: []int64{-1, 1, -1, 8}},
		{Name: "past_key_values.0.value", Type: "float32", Shape: []int64{-1, 1, -1, 8}},
	}
	outs := []onnxgen.Value{
		{Name: "logits", Type: "float32", Shape: []int64{-1, -1, 64}},
		{Name: "present.0.key", Type: "float32", Shape: []int64{-1, 1, -1, 8}},
		{Name: "present.0.value", Type: "float32", Shape: []int64{-1, 1, -1, 8}},
	}
	merge := func(list, extra []onnxgen.Value) []onnxgen.Value {
		for _, e := range extra {
			replaced := false
			for i := range list {
				if list[i].Name == e.Name {
					list[i], replaced = e, true
				}
			}
			if !replaced {
				list = append(list, e)
			}
		}
		return list
	}
	return merge(ins, extraIns), merge(outs, extraOuts)
}

// Each form Prism does not run is refused at load by name — the config
// key or the graph input that shows it and the form in words — as a
// *FormError inside the ModelLoadError, never as a complaint about an
// input the graph was never meant to have.
func TestFormsRefusedByName(t *testing.T) {
	f32 := func(name string, shape ...int64) onnxgen.Value {
		return onnxgen.Value{Name: name, Type: "float32", Shape: shape}
	}
	i64 := func(name string, shape ...int64) onnxgen.Value {
		return onnxgen.Value{Name: name, Type: "int64", Shape: shape}
	}
	type sig struct{ ins, outs []onnxgen.Value }
	with := func(ins, outs []onnxgen.Value) sig { i, o := decoderSig(ins, outs); return sig{i, o} }
	plain := with(nil, nil)
	for _, tc := range []struct {
		name           string
		model, decoder map[string]any
		sig            sig
		want           []string
	}{
		{"hybrid-linear-attention-state", nil, nil,
			with([]onnxgen.Value{f32("conv_state.1", -1, 16, 3), f32("recurrent_state.1", -1, 2, 8, 8)}, nil),
			[]string{`input "conv_state.1"`, "a hybrid decoder's state under a name Prism does not know to pair with its output"}},
		{"linear-attention-state-unpaired", nil, map[string]any{"num_hidden_layers": 2},
			with([]onnxgen.Value{f32("past_key_values.1.conv_state", -1, 16, 3)}, []onnxgen.Value{f32("present_conv_state.1", -1, 16, 3)}),
			[]string{`input "past_key_values.1.conv_state"`, `a hybrid decoder's state whose output "present.1.conv_state"`}},
		{"genai-past-conv-unnamed", nil, map[string]any{"num_hidden_layers": 2},
			with([]onnxgen.Value{f32("past.1.conv", -1, 16, 3)}, []onnxgen.Value{f32("present.1.conv", -1, 16, 3)}),
			[]string{`input "past.1.conv"`, "a hybrid decoder's state under a name Prism does not know to pair with its output"}},
		{"genai-state-update-capacity", nil, map[string]any{"state_update_capacity": 3}, plain,
			[]string{"model.decoder.state_update_capacity", "captured token by token"}},
		{"state-update-input", nil, nil, with([]onnxgen.Value{{Name: "state_update_capture_count", Type: "int32", Shape: []int64{-1}}}, nil),
			[]string{`input "state_update_capture_count"`, "captured token by token"}},
		{"genai-layer-types", nil, map[string]any{"layer_types": []any{"mamba", "full_attention"}}, plain,
			[]string{"model.decoder.layer_types[0]", `layer 0 is string "mamba"`, "hybrid decoder"}},
		{"genai-state-group-paged", nil, map[string]any{"state_groups": []any{map[string]any{"kind": "paged_kv", "layer_ids": []any{0},
			"bindings": map[string]any{"key": map[string]any{"input": "past_key_values.%d.key", "output": "present.%d.key"}}}}}, plain,
			[]string{"model.decoder.state_groups[0].kind", `kind "paged_kv"`, "paged KV cache"}},
		{"genai-state-update", nil, map[string]any{"state_groups": []any{map[string]any{"kind": "fixed", "layer_ids": []any{0},
			"bindings":     map[string]any{"state": map[string]any{"input": "past_conv.%d", "output": "present_conv.%d"}},
			"state_update": map[string]any{"kind": "causal_conv"}}}}, plain,
			[]string{"model.decoder.state_groups[0].state_update", "a state group fed through state_update"}},
		{"paged-cache", nil, nil,
			with([]onnxgen.Value{i64("block_table", -1, -1), i64("cumulative_sequence_lengths", -1)}, nil),
			[]string{`input "block_table"`, "paged KV cache"}},
		{"inputs-embeds-graph", nil, nil,
			sig{[]onnxgen.Value{f32("inputs_embeds", -1, -1, 16), i64("attention_mask", -1, -1), f32("past_key_values.0.key", -1, 1, -1, 8), f32("past_key_values.0.value", -1, 1, -1, 8)},
				plain.outs},
			[]string{`input "inputs_embeds"`, "inputs_embeds from a separate embedding model"}},
		{"genai-embedding-section", map[string]any{"embedding": map[string]any{"filename": "embeds.onnx"}}, nil, plain,
			[]string{"model.embedding", "inputs_embeds from a separate embedding model (genai embedding section)"}},
		{"fixed-batch-logits", nil, nil, with(nil, []onnxgen.Value{f32("logits", 2, -1, 64)}),
			[]string{`output "logits"`, "a fixed batch of 2"}},
		{"fixed-batch-input", nil, nil, with([]onnxgen.Value{i64("input_ids", 4, -1)}, nil),
			[]string{`input "input_ids"`, "a fixed batch of 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := formFolder(t, tc.model, tc.decoder, tc.sig.ins, tc.sig.outs)
			_, err := Open(t.Context(), dir, Options{Device: DeviceCPU, ORTLibrary: fixtures.ORTLib(t), Logger: testLogger(t)})
			var fe *FormError
			var le *engine.ModelLoadError
			if !errors.As(err, &fe) || !errors.As(err, &le) || errcode.Of(err) != errcode.ModelLoadFailed {
				t.Fatalf("want a ModelLoadError with a FormError; got %v", err)
			}
			for _, w := range append(tc.want, "not supported") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q: %v", w, err)
				}
			}
			t.Log(err)
		})
	}
	// The same signature without the form loads as far as the runtime,
	// which cannot run a graph without nodes: the refusals above come from
	// the form, not from the folder.
	_, err := Open(t.Context(), formFolder(t, nil, nil, plain.ins, plain.outs), Options{Device: DeviceCPU, ORTLibrary: fixtures.ORTLib(t), Logger: testLogger(t)})
	var fe *FormError
	if err == nil || errors.As(err, &fe) {
		t.Fatalf("the plain signature: %v", err)
	}
}
