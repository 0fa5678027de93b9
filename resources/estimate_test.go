package resources_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/resources"
)

// writeFolder writes files (name → content) under a temp dir.
func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func bytesOf(n int) string { return string(make([]byte, n)) }

const qwenGenai = `{"model":{"context_length":32768,"vocab_size":151936,"decoder":{"filename":"model.onnx","head_size":64,
"hidden_size":896,"num_attention_heads":14,"num_key_value_heads":2,"num_hidden_layers":24}},"search":{"max_length":2048}}`

const qwenHF = `{"num_hidden_layers":24,"num_attention_heads":14,"num_key_value_heads":2,"hidden_size":896,
"intermediate_size":4864,"vocab_size":151936,"max_position_embeddings":32768}`

func TestEstimateGenaiLayoutOnCPU(t *testing.T) {
	dir := writeFolder(t, map[string]string{
		"genai_config.json": qwenGenai, "config.json": qwenHF,
		"model.onnx": bytesOf(1000), "model.onnx.data": bytesOf(5000), "tokenizer.json": bytesOf(77),
	})
	est, err := resources.EstimateModel(dir, "cpu", resources.Plan{PrefillChunk: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if est.WeightBytes != 6000 || len(est.WeightFiles) != 2 {
		t.Fatalf("weights %d from %v", est.WeightBytes, est.WeightFiles)
	}
	if est.Tokens != 2048 {
		t.Fatalf("tokens %d, want search.max_length 2048", est.Tokens)
	}
	const kvPerTok = 24 * 2 * 64 * 2 * 4
	if est.KVBytesPerToken != kvPerTok || est.KVBytes != kvPerTok*2048 {
		t.Fatalf("kv %d/token, %d total", est.KVBytesPerToken, est.KVBytes)
	}
	// The scores row of a chunk token spans every key it attends to: up to
	// the whole planned length (2048), not just its own chunk.
	const prefillPerTok = 4*(2*896+4864) + 4*151936 + 4*14*2048
	if est.PrefillBytesPerToken != prefillPerTok || est.PrefillBytes != prefillPerTok*1024 {
		t.Fatalf("prefill %d/token, %d total", est.PrefillBytesPerToken, est.PrefillBytes)
	}
	// Batched decoding of 4 sequences keeps 4 caches and the prefill's.
	batched, err := resources.EstimateModel(dir, "cpu", resources.Plan{PrefillChunk: 1024, Sequences: 4})
	if err != nil {
		t.Fatal(err)
	}
	if batched.Caches != 5 || batched.KVBytes != kvPerTok*2048*5 || batched.Total() != est.Total()+4*kvPerTok*2048 {
		t.Fatalf("4 sequences: %d caches, kv %d; want 5 caches, %d", batched.Caches, batched.KVBytes, kvPerTok*2048*5)
	}
	if est.Total() != 6000+kvPerTok*2048+prefillPerTok*1024 {
		t.Fatalf("total %d", est.Total())
	}
	if len(est.Notes) != 0 {
		t.Fatalf("unexpected notes %v", est.Notes)
	}
}

func TestEstimateOptimumLayoutOnCUDA(t *testing.T) {
	dir := writeFolder(t, map[string]string{
		"config.json": `{"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_size":4096,
			"intermediate_size":14336,"vocab_size":128256,"max_position_embeddings":131072}`,
		"onnx/model.onnx": bytesOf(300), "onnx/model.onnx_data": bytesOf(9000),
	})
	est, err := resources.EstimateModel(dir, "cuda:1", resources.Plan{Tokens: 8192, PrefillChunk: 512})
	if err != nil {
		t.Fatal(err)
	}
	if est.Device != "cuda:1" || est.WeightBytes != 9300 {
		t.Fatalf("device %s weights %d", est.Device, est.WeightBytes)
	}
	const kvPerTok = 32 * 8 * 128 * 2 * 2 // head_dim = 4096/32, float16
	if est.KVBytesPerToken != kvPerTok || est.KVBytes != kvPerTok*8192 {
		t.Fatalf("kv %d/token", est.KVBytesPerToken)
	}
	const prefillPerTok = 2*(2*4096+14336) + 4*128256 + 4*32*8192
	if est.PrefillBytesPerToken != prefillPerTok {
		t.Fatalf("prefill %d/token, want %d", est.PrefillBytesPerToken, prefillPerTok)
	}
}

// A folder with only onnx/model_q4.onnx is budgeted by that file and its
// external data, shards included.
func TestEstimateOnlyQ4Variant(t *testing.T) {
	dir := writeFolder(t, map[string]string{
		"config.json":        qwenHF,
		"onnx/model_q4.onnx": bytesOf(300), "onnx/model_q4.onnx_data": bytesOf(9000), "onnx/model_q4.onnx_data_1": bytesOf(500),
		"tokenizer.json": bytesOf(77),
	})
	est, err := resources.EstimateModel(dir, "cpu", resources.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	if est.WeightBytes != 9800 || len(est.WeightFiles) != 3 || est.Variant != "q4" {
		t.Fatalf("variant %q weights %d from %v", est.Variant, est.WeightBytes, est.WeightFiles)
	}
}

// With several variants the estimate measures the one that loads: the
// variant named, else the device's first choice, and never another
// variant's data.
func TestEstimateMeasuresTheVariantThatLoads(t *testing.T) {
	dir := writeFolder(t, map[string]string{
		"config.json":     qwenHF,
		"onnx/model.onnx": bytesOf(1), "onnx/model.onnx_data": bytesOf(1000), "onnx/model.onnx_data_1": bytesOf(1000),
		"onnx/model_fp16.onnx": bytesOf(2), "onnx/model_fp16.onnx_data": bytesOf(1000),
		"onnx/model_q4.onnx": bytesOf(3), "onnx/model_q4.onnx_data": bytesOf(300),
		"onnx/model_q4f16.onnx": bytesOf(4), "onnx/model_q4f16.onnx_data": bytesOf(250),
	})
	for _, c := range []struct {
		device, variant, want string
		bytes                 uint64
	}{
		{"cpu", "", "fp32", 2001},
		{"cuda", "", "fp16", 1002},
		{"cpu", "q4", "q4", 303},
		{"cuda:0", "q4f16", "q4f16", 254},
	} {
		est, err := resources.EstimateModel(dir, c.device, resources.Plan{Variant: c.variant})
		if err != nil {
			t.Fatal(err)
		}
		if est.Variant != c.want || est.WeightBytes != c.bytes {
			t.Errorf("%s %q: measured %s, %d bytes; want %s, %d", c.device, c.variant, est.Variant, est.WeightBytes, c.want, c.bytes)
		}
	}
	if _, err := resources.EstimateModel(dir, "cpu", resources.Plan{Variant: "int8"}); !errors.Is(err, resources.ErrModelFolder) {
		t.Fatalf("missing variant: %v", err)
	}
}

func TestEstimateUnknownShapeUsesFallbacks(t *testing.T) {
	dir := writeFolder(t, map[string]string{"model.onnx": bytesOf(10)})
	est, err := resources.EstimateModel(dir, "", resources.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	if est.PrefillBytesPerToken != resources.FallbackPrefillBytesPerToken || est.PrefillChunk != resources.DefaultPrefillChunk ||
		est.Tokens != resources.DefaultPlannedTokens || est.KVBytes != 0 || len(est.Notes) < 3 {
		t.Fatalf("estimate %+v", est)
	}
}

func TestEstimateCapsPlanAtContextLength(t *testing.T) {
	dir := writeFolder(t, map[string]string{"config.json": `{"num_hidden_layers":2,"num_attention_heads":2,"hidden_size":8,"vocab_size":10,"max_position_embeddings":128}`, "model.onnx": "x"})
	est, err := resources.EstimateModel(dir, "cpu", resources.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	if est.Tokens != 128 {
		t.Fatalf("tokens %d, want context length 128", est.Tokens)
	}
}

func TestEstimateErrors(t *testing.T) {
	tests := map[string]map[string]string{
		"no graph":         {"config.json": qwenHF},
		"bad config":       {"config.json": "{", "model.onnx": "x"},
		"bad genai":        {"genai_config.json": `{"model":[]}`, "model.onnx": "x"},
		"named graph gone": {"genai_config.json": `{"model":{"decoder":{"filename":"decoder.onnx"}}}`, "model.onnx": "x"},
	}
	for name, files := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := resources.EstimateModel(writeFolder(t, files), "cpu", resources.Plan{})
			if !errors.Is(err, resources.ErrModelFolder) {
				t.Fatalf("err = %v, want ErrModelFolder", err)
			}
		})
	}
	if _, err := resources.EstimateModel(t.TempDir(), "tpu", resources.Plan{}); err == nil {
		t.Fatal("bad device accepted")
	}
}

func FuzzParseModelShape(f *testing.F) {
	f.Add([]byte(qwenGenai), []byte(qwenHF))
	f.Add([]byte(`{}`), []byte(`{"text_config":{"num_hidden_layers":4,"hidden_size":-3}}`))
	f.Add([]byte(`null`), []byte(`{"num_attention_heads":99999999999}`))
	f.Fuzz(func(t *testing.T, genai, hf []byte) {
		s, err := resources.ParseModelShape(genai, hf)
		if err != nil {
			return
		}
		for _, v := range []int{s.Layers, s.Heads, s.KVHeads, s.HeadDim, s.Hidden, s.Intermediate, s.Vocab, s.ContextLength, s.MaxLength} {
			if v < 0 || v > 1<<30 {
				t.Fatalf("out-of-range field in %+v", s)
			}
		}
	})
}
