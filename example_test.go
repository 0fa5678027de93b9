//go:build cgo

package prism_test

import (
	"context"
	"fmt"
	"os"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
)

// Open a model folder and generate. (The folder here is a tiny scripted
// model the tests write; any genai or optimum export works the same.)
func ExampleOpen() {
	dir, err := demoModel()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	// WithEnv applies the PRISM_* settings (PRISM_ORT_LIB, PRISM_HOME, ...);
	// without it Open reads no environment.
	e, err := prism.Open(ctx, dir, prism.WithEnv(os.Environ()), prism.WithDevice("cpu"))
	if err != nil {
		fmt.Println(err) // an *engine.ModelLoadError naming the file or field at fault
		return
	}
	defer e.Close()

	s, err := e.Stream(ctx, engine.Request{Prompt: "Who are you?", MaxTokens: 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for s.Next() {
		fmt.Print(s.Token().Text())
	}
	fmt.Println()
	fmt.Println(s.Result().FinishReason, "on", e.Device())
	// Output:
	// Hello from Prism!
	// stop on cpu
}
