package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prism-local/prism/internal/catalog"
)

func ExampleCatalog_Resolve() {
	models, _ := os.MkdirTemp("", "models")
	defer os.RemoveAll(models)
	for _, f := range []string{"Qwen/Qwen2.5-0.5B-Instruct/config.json", "Qwen/Qwen2.5-0.5B-Instruct/onnx/model_q4.onnx"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(models, f)), 0o755)
		_ = os.WriteFile(filepath.Join(models, f), []byte("{}"), 0o644)
	}
	cat, err := catalog.Scan(context.Background(), catalog.Sources{
		ModelsDirs: []string{models},
		HubCache:   "/nonexistent-home/.cache/huggingface/hub",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sel, err := cat.Resolve("qwen2.5-0.5b:q4")
	fmt.Println(sel.ID, sel.Variant, err)
	_, err = cat.Resolve("llama")
	fmt.Println(err)
	// Output:
	// Qwen/Qwen2.5-0.5B-Instruct q4 <nil>
	// model "llama" not found; the models are: Qwen/Qwen2.5-0.5B-Instruct
}
