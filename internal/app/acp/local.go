package acp

import (
	"context"

	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/resources"
)

// ContextSizes returns a function that reads a local model's context window
// from its folder (0 when the model is not on this machine or the folder
// does not say), for usage_update. The catalog is scanned once.
func ContextSizes(ctx context.Context, src catalog.Sources) (func(model string) int, error) {
	cat, err := catalog.Scan(ctx, src)
	if err != nil {
		return nil, err
	}
	return func(model string) int {
		sel, err := cat.Resolve(model)
		if err != nil {
			return 0
		}
		f, err := modelfolder.Read(sel.Dir)
		if err != nil {
			return 0
		}
		genai, _ := f.ReadOptional("genai_config.json")
		hf, _ := f.ReadOptional("config.json")
		shape, err := resources.ParseModelShape(genai, hf)
		if err != nil {
			return 0
		}
		return shape.ContextLength
	}, nil
}
