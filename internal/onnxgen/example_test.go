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

// ExampleNewOracle runs a prompt and then one cached decode step through the
// pure-Go reference forward pass.
func ExampleNewOracle() {
	cfg := onnxgen.Tiny()
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		panic(err)
	}
	prompt := []int32{5, 6, 7}
	logits := o.Forward(prompt, 0) // prefill: positions 0..2
	next := int32(0)
	for i, v := range logits {
		if v > logits[next] {
			next = int32(i)
		}
	}
	logits = o.Forward([]int32{next}, len(prompt)) // reuses the cache for positions 0..2
	fmt.Println(len(logits) == cfg.Vocab)
	// Output: true
}
