package onnx

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prism-local/prism/internal/modelfolder"
)

const genaiJSON = `{
  "model": {
    "bos_token_id": 1,
    "context_length": 4096,
    "decoder": {
      "session_options": {"intra_op_num_threads": 3, "inter_op_num_threads": 1,
        "provider_options": [{"cuda": {"enable_cuda_graph": "0", "device_id": 0}}]},
      "filename": "decoder.onnx",
      "head_size": 64, "hidden_size": 896, "num_attention_heads": 14,
      "num_hidden_layers": 24, "num_key_value_heads": 2,
      "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
        "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"},
      "outputs": {"logits": "logits", "present_key_names": "present.%d.key", "present_value_names": "present.%d.value"}
    },
    "eos_token_id": [151645, 151643],
    "type": "qwen2",
    "vocab_size": 151936
  },
  "search": {"past_present_share_buffer": true, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "max_length": 4096}
}`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadGenAIConfig(t *testing.T) {
	dir := writeFiles(t, map[string]string{"genai_config.json": genaiJSON, "decoder.onnx": "x"})
	cfg, err := readConfig(dir, "", DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.layout != LayoutGenAI || cfg.graphPath != filepath.Join(dir, "decoder.onnx") {
		t.Fatalf("layout %s graph %s", cfg.layout, cfg.graphPath)
	}
	if cfg.layers != 24 || cfg.kvHeads != 2 || cfg.headDim != 64 || cfg.contextLength != 4096 || cfg.vocabSize != 151936 {
		t.Fatalf("sizes: %+v", cfg)
	}
	if !slices.Equal(cfg.eos, []int32{151645, 151643}) || !cfg.hasBOS || cfg.bos != 1 {
		t.Fatalf("eos %v bos %d", cfg.eos, cfg.bos)
	}
	if !cfg.shareBuffer || cfg.intraOpThreads != 3 || cfg.interOpThreads != 1 {
		t.Fatalf("share %v threads %d/%d", cfg.shareBuffer, cfg.intraOpThreads, cfg.interOpThreads)
	}
	if cfg.providerOptions["cuda"]["enable_cuda_graph"] != "0" || cfg.providerOptions["cuda"]["device_id"] != "0" {
		t.Fatalf("provider options %v", cfg.providerOptions)
	}
	if cfg.pastKeyTmpl != "past_key_values.%d.key" || layerName(cfg.presentValueTmpl, 3) != "present.3.value" {
		t.Fatalf("templates %q %q", cfg.pastKeyTmpl, cfg.presentValueTmpl)
	}
	if cfg.search.TopK != 20 || cfg.search.Temperature != 0.7 {
		t.Fatalf("search %+v", cfg.search)
	}
}

func TestReadOptimumConfig(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"config.json": `{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
			"vocab_size": 300, "max_position_embeddings": 512, "eos_token_id": 2, "bos_token_id": 1}`,
		"generation_config.json": `{"eos_token_id": [2, 7], "temperature": 0.6, "do_sample": true}`,
		"onnx/model.onnx":        "x",
	})
	cfg, err := readConfig(dir, "", DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.layout != LayoutOptimum || cfg.kvHeads != 4 || cfg.headDim != 16 || cfg.contextLength != 512 {
		t.Fatalf("%+v", cfg)
	}
	if !slices.Equal(cfg.eos, []int32{2, 7}) || !cfg.search.DoSample || cfg.search.Temperature != 0.6 {
		t.Fatalf("eos %v search %+v", cfg.eos, cfg.search)
	}
}

func TestConfigErrorsNameFileAndField(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		file  string // base name of the file the error must name
		field string
	}{
		{"no config at all", map[string]string{}, "config.json", ""},
		{"graph named but missing", map[string]string{"genai_config.json": genaiJSON}, "decoder.onnx", ""},
		{"optimum graph missing", map[string]string{"config.json": `{"num_hidden_layers": 2}`}, "model.onnx", ""},
		{"not json", map[string]string{"genai_config.json": `{`}, "genai_config.json", ""},
		{"wrong type", map[string]string{"genai_config.json": `{"model": {"decoder": {"filename": "m.onnx", "head_size": "64"}}}`}, "genai_config.json", "model.decoder.head_size"},
		{"bad eos", map[string]string{"config.json": `{"eos_token_id": ["x"]}`}, "config.json", "eos_token_id[0]"},
		{"bad template", map[string]string{"genai_config.json": `{"model": {"decoder": {"filename": "m.onnx", "inputs": {"past_key_names": "past"}}}}`}, "genai_config.json", "model.decoder.inputs.past_key_names"},
		{"escaping filename", map[string]string{"genai_config.json": `{"model": {"decoder": {"filename": "../m.onnx"}}}`}, "genai_config.json", "model.decoder.filename"},
		{"bad provider options", map[string]string{"genai_config.json": `{"model": {"decoder": {"filename": "m.onnx", "session_options": {"provider_options": {"cuda": {}}}}}}`}, "genai_config.json", "model.decoder.session_options.provider_options"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			_, err := readConfig(dir, "", DeviceCPU)
			if err == nil {
				t.Fatal("no error")
			}
			var ce *ConfigError
			var me *MissingFileError
			var file, field string
			switch {
			case errors.As(err, &ce):
				file, field = ce.File, ce.Field
			case errors.As(err, &me):
				file = me.Path
			default:
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if filepath.Base(file) != c.file || field != c.field {
				t.Fatalf("error names file %q field %q, want %q %q: %v", file, field, c.file, c.field, err)
			}
		})
	}
}

func TestHalfToFloat(t *testing.T) {
	cases := map[uint16]float32{0x0000: 0, 0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 5.960464477539063e-08, 0x3555: 0.33325195}
	for h, want := range cases {
		if got := halfToFloat(h); got != want {
			t.Errorf("halfToFloat(%#04x) = %v, want %v", h, got, want)
		}
	}
}

// genai_config.json's linear-attention state names pair as
// onnxruntime-genai pairs them: the config's present_ name when it gives
// one, else genai's default (present.%d.conv_state,
// present.%d.recurrent_state), never a name made up from the input's.
func TestGenAIStateNames(t *testing.T) {
	data := []byte(`{"model": {"type": "qwen3_5", "vocab_size": 64, "decoder": {"filename": "model.onnx",
		"inputs": {"past_conv_names": "past.%d.conv", "past_recurrent_names": "past_key_values.%d.recurrent_state"},
		"outputs": {"present_conv_names": "present.%d.conv"}}}}`)
	cfg, err := parseGenAIConfig(t.TempDir(), "genai_config.json", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []stateTemplate{{"past.%d.conv", "present.%d.conv"}, {"past_key_values.%d.recurrent_state", "present.%d.recurrent_state"}}
	if !slices.Equal(cfg.states, want) {
		t.Fatalf("states %v, want %v", cfg.states, want)
	}
	_, err = parseGenAIConfig(t.TempDir(), "genai_config.json", []byte(`{"model": {"decoder": {"inputs": {"past_recurrent_names": "past.recurrent"}}}}`))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "model.decoder.inputs.past_recurrent_names" {
		t.Fatalf("a template without %%d: %v", err)
	}
}

// FuzzParseConfig: no input makes the config parsers panic, and what they
// accept has sane sizes.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(genaiJSON), true)
	f.Add([]byte(`{"num_hidden_layers": 2, "eos_token_id": [1, 2], "text_config": {"vocab_size": 10}}`), false)
	f.Add([]byte(`{"model": {"decoder": {"filename": "m.onnx"}}, "search": null}`), true)
	f.Add([]byte(`[]`), true)
	f.Add([]byte(`{"sliding_window": 4096, "use_sliding_window": "no", "layer_types": ["sliding_attention", 3, null]}`), false)
	f.Add([]byte(`{"model": {"decoder": {"layer_types": ["conv", "full_attention"], "conv_cache_size": 2, "inputs": {"past_conv_names": "past_conv.%d", "past_names": "past_%d"},
		"state_groups": [{"kind": "fixed", "layer_ids": [0], "bindings": {"state": {"input": "past_recurrent.%d", "output": "present_recurrent.%d"}}}]}, "embedding": {}}}`), true)
	f.Add([]byte(`{"model": {"decoder": {"layer_types": ["linear_attention", "full_attention"], "inputs": {"past_conv_names": "past.%d.conv", "past_recurrent_names": "past_key_values.%d.recurrent_state"},
		"outputs": {"present_conv_names": "present.%d.conv"}, "state_groups": [{"kind": "fixed_conv", "layer_ids": [0]}, {"kind": "fixed_recurrent", "layer_ids": [0]}]}}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, genai bool) {
		var cfg *modelConfig
		var err error
		if genai {
			cfg, err = parseGenAIConfig(t.TempDir(), "genai_config.json", data)
		} else {
			cfg, err = parseOptimumConfig("dir", "config.json", data, "generation_config.json", data)
		}
		if err != nil {
			return
		}
		if cfg.layers < 0 || cfg.kvHeads < 0 || cfg.headDim < 0 || cfg.contextLength < 0 {
			t.Fatalf("negative sizes: %+v", cfg)
		}
	})
}

func TestDeclaresWindow(t *testing.T) {
	for _, c := range []struct {
		config string
		want   bool
	}{
		{`{"model_type": "llama"}`, false},
		{`{"sliding_window": null}`, false},                                // Mistral v0.2+
		{`{"sliding_window": 4096}`, true},                                 // Mistral v0.1
		{`{"sliding_window": 2047}`, true},                                 // Phi-3
		{`{"sliding_window": 131072, "use_sliding_window": false}`, false}, // Qwen2
		{`{"sliding_window": 4096, "use_sliding_window": true}`, true},     //
		{`{"layer_types": ["full_attention", "full_attention"]}`, false},   //
		{`{"layer_types": ["sliding_attention", "full_attention"]}`, true}, // Gemma 3
		{`{"attention_chunk_size": 8192}`, true},                           // Llama 4
		{`{"sliding_window": "yes"}`, true},                                // unreadable: err towards yes
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.config), &m); err != nil {
			t.Fatal(err)
		}
		if got := declaresWindow(m); got != c.want {
			t.Errorf("%s: window %v, want %v", c.config, got, c.want)
		}
	}
}

// The load log says who picked the variant: the user, a caller applying
// the device rule for them (prism.Open), Open itself, or the folder.
func TestVariantLog(t *testing.T) {
	three := []string{"fp32", "q4", "fp16"}
	pick := func(v string, requested bool, present ...string) modelfolder.Choice {
		c := modelfolder.Choice{Present: present, Requested: requested}
		c.Variant = v
		return c
	}
	for _, tc := range []struct {
		c      modelfolder.Choice
		picked string
		want   string
	}{
		{pick("q4", true, three...), "", "q4 (named by the caller)"},
		{pick("fp32", true, three...), "for cpu by the device rule", "fp32 (picked for cpu by the device rule; not picked: q4, fp16)"},
		{pick("q4", true, three...), "for cpu by the device rule, the first that fits the memory budget",
			"q4 (picked for cpu by the device rule, the first that fits the memory budget; not picked: fp32, fp16)"},
		{pick("fp32", false, three...), "", "fp32 (picked for auto by the device rule; not picked: q4, fp16)"},
		{pick("q4", true, "q4"), "for cpu by the device rule", "q4 (the only one present)"},
		{pick("q4", false, "q4"), "", "q4 (the only one present)"},
		{pick("", false), "", "none"},
	} {
		if got := variantLog(tc.c, tc.picked, DeviceAuto); got != tc.want {
			t.Errorf("variantLog(%+v, %q) = %q, want %q", tc.c, tc.picked, got, tc.want)
		}
	}
	if err := (Options{VariantPicked: "for cpu by the device rule"}).validate(); err == nil {
		t.Error("VariantPicked without Variant validated")
	}
}
