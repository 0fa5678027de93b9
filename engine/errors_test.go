package engine_test

import (
	"errors"
	"testing"

	"github.com/prism-local/prism/engine"
)

// TestModelLoadErrorSaysEachPartOnce: the model, file and field are
// printed unless the cause already names them.
func TestModelLoadErrorSaysEachPartOnce(t *testing.T) {
	cases := []struct {
		name string
		err  *engine.ModelLoadError
		want string
	}{
		{"cause names nothing",
			&engine.ModelLoadError{Model: "qwen", File: "/m/config.json", Field: "vocab_size", Err: errors.New("want an integer")},
			`load model "qwen": file /m/config.json: field vocab_size: want an integer`},
		{"cause names file and field",
			&engine.ModelLoadError{Model: "/m", File: "/m/config.json", Field: "model.vocab_size", Err: errors.New("model config /m/config.json: field model.vocab_size: missing")},
			`load model "/m": model config /m/config.json: field model.vocab_size: missing`},
		{"cause names the model",
			&engine.ModelLoadError{Model: "/m", Err: errors.New("timed out after 2s waiting to load /m: the lock is held")},
			`load model: timed out after 2s waiting to load /m: the lock is held`},
		{"a path inside the model does not name it",
			&engine.ModelLoadError{Model: "/m", Err: errors.New("model file /m/model.onnx not found")},
			`load model "/m": model file /m/model.onnx not found`},
		{"a longer name does not name it",
			&engine.ModelLoadError{Model: "qwen", File: "config.json", Err: errors.New("qwen2 needs config.json5")},
			`load model "qwen": file config.json: qwen2 needs config.json5`},
		{"no cause",
			&engine.ModelLoadError{Model: "qwen", File: "/m/model.onnx"},
			`load model "qwen": file /m/model.onnx`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}
