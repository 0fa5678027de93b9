package resources_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

// Decide is the budget as a pure function: estimate, readings and reserves
// in, decision out.
func ExampleDecide() {
	est := resources.Estimate{Device: "cuda:0", WeightBytes: 6 << 30, KVBytes: 1 << 30, PrefillBytes: 1 << 30, Tokens: 4096, PrefillChunk: 1024}
	readings := resources.Readings{
		Memory: resources.Memory{Total: 32 << 30, Available: 20 << 30},
		GPUs: resources.GPUStatus{Available: true, Devices: []resources.GPU{
			{Index: 0, Name: "RTX 4070", TotalBytes: 12 << 30, FreeBytes: 3 << 30},
		}},
	}
	holder := &lock.Holder{PID: 4242, Model: "llama-3.1-8b"}
	err := resources.Decide(est, readings, resources.DefaultReserves(), holder).Err()

	var refusal *resources.InsufficientResourcesError
	if errors.As(err, &refusal) {
		fmt.Println(refusal.Code(), refusal.Check.Resource, refusal.Holder)
	}
	// Output: insufficient_resources vram pid 4242 (model llama-3.1-8b)
}

// A Checker runs the budget for a model folder under the load lock, before
// the runtime loads anything.
func ExampleChecker_Check() {
	c := resources.NewChecker(resources.WithReserves(resources.DefaultReserves())) // budget on, default reserves
	before := c.Snapshot(false)
	if _, err := c.Check(context.Background(), "/path/to/model", "cpu", resources.Plan{Tokens: 4096}); err != nil {
		fmt.Println("not loading:", errors.Is(err, resources.ErrInsufficientResources) || errors.Is(err, resources.ErrModelFolder))
		return
	}
	// ... load ...
	resources.LogLoad(context.Background(), nil, "model", "cpu", before, c.Snapshot(false))
	// Output: not loading: true
}
