package onnxgen_test

import (
	"context"
	"fmt"
	"os"

	"github.com/prism-local/prism/internal/onnxgen"
)

// ExampleWrite writes a tiny random-weight model in the optimum layout and
// asks the oracle for its greedy continuation.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "onnxgen")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	cfg := onnxgen.Tiny()
	cfg.Script = []int32{10, 11, 12} // emit these, then EOS
	cfg.ScriptEOS = 2
	if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
		panic(err)
	}
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println(o.Greedy([]int32{1, 2, 3, 4}, 10, []int32{2}))
	_, err = os.Stat(dir + "/" + cfg.ModelFile())
	fmt.Println(cfg.ModelFile(), err == nil)
	// Output:
	// [10 11 12 2]
	// onnx/model.onnx true
}
