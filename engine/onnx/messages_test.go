package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadErrorMessages pins the whole message of representative load
// failures, as Open returns them: each part is said once, by the layer
// that knows it (ModelLoadError names the model, this package's error the
// file, field and problem). readConfig and loadError are what Open runs
// before the runtime is involved, so this holds in builds without cgo too.
func TestLoadErrorMessages(t *testing.T) {
	folder := func(t *testing.T, genai string) string {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "genai_config.json"), []byte(genai), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	const decoder = `"decoder": {"filename": "model.onnx", "head_size": 8, "hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1}`
	cases := []struct {
		name  string
		genai string
		want  string // with DIR for the model folder
	}{
		{"missing field", `{"model": {"type": "qwen2", "decoder": {"head_size": 8}}}`,
			`load model "DIR": model config DIR/genai_config.json: field model.decoder.filename: missing: it names the decoder graph`},
		{"field of the wrong type", `{"model": {"type": "qwen2", "vocab_size": "many", ` + decoder + `}}`,
			`load model "DIR": model config DIR/genai_config.json: field model.vocab_size: want an integer, have string "many"`},
		{"missing graph file", `{"model": {"type": "qwen2", "vocab_size": 64, ` + decoder + `}}`,
			`load model "DIR": model file DIR/model.onnx not found (the decoder graph named by model.decoder.filename in DIR/genai_config.json)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := folder(t, c.genai)
			_, err := readConfig(dir, "", DeviceCPU)
			if err == nil {
				t.Fatal("readConfig succeeded")
			}
			got := loadError(dir, err).Error()
			if want := strings.ReplaceAll(c.want, "DIR", dir); got != want {
				t.Errorf("message\n got %s\nwant %s", got, want)
			}
			assertNoRepeat(t, got)
		})
	}
}

// TestDeviceErrorMessage pins a device failure as Open reports it.
func TestDeviceErrorMessage(t *testing.T) {
	err := loadError("qwen", &DeviceError{Device: DeviceCUDA, Cause: "libonnxruntime_providers_cuda.so is missing",
		Err: errors.New("CUDA execution provider is not enabled in this build")})
	want := `load model "qwen": device cuda unavailable: libonnxruntime_providers_cuda.so is missing (onnx runtime: CUDA execution provider is not enabled in this build)`
	if got := err.Error(); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
	assertNoRepeat(t, err.Error())
	ge := loadError("qwen", &GraphError{Graph: "/m/model.onnx", Msg: "onnx runtime cannot load it", Err: errors.New("protobuf parsing failed")})
	want = `load model "qwen": decoder graph /m/model.onnx: onnx runtime cannot load it: protobuf parsing failed`
	if got := ge.Error(); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
}

// assertNoRepeat fails when a path or a dotted field name appears twice in
// msg: the sign of a layer repeating what its cause already says.
func assertNoRepeat(t *testing.T, msg string) {
	t.Helper()
	seen := map[string]bool{}
	for word := range strings.FieldsSeq(msg) {
		word = strings.Trim(word, `:"(),`)
		if !strings.ContainsAny(word, "/.") {
			continue
		}
		if seen[word] {
			t.Errorf("%s is said twice in %s", word, msg)
		}
		seen[word] = true
	}
}
