package prism_test

import (
	"context"
	"fmt"
	"os"

	"github.com/prism-local/prism"
)

// Pull fetches the q4 variant of a model into the Hugging Face cache the
// environment names, reporting each finished file; Open then loads the
// snapshot it returns.
func ExamplePull() {
	ctx := context.Background()
	res, err := prism.Pull(ctx, "onnx-community/Qwen3-0.6B-ONNX:q4",
		prism.PullEnv(os.Environ()),
		prism.PullProgressFunc(func(p prism.PullProgress) {
			if p.File != "" && p.FileBytes == p.FileSize {
				fmt.Printf("%d/%d %s\n", p.FilesDone, p.Files, p.File)
			}
		}))
	if err != nil {
		fmt.Println(err) // names the fix: HF_TOKEN for a gated model, the revision that is missing, ...
		return
	}
	fmt.Println(res.Dir, res.Variant, res.Downloaded)
}
