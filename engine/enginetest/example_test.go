package enginetest_test

import (
	"context"
	"fmt"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// A real engine over a scripted model: code under test sees genuine Stream
// behaviour (stop strings, max_tokens, usage) without a model file.
func ExampleNew() {
	eng, err := enginetest.New("The answer is 42. Anything else?")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	text, res, err := eng.Generate(context.Background(), engine.Request{Prompt: "What is the answer?", Stop: []string{"."}})
	fmt.Printf("%q %s %d %v\n", text, res.FinishReason, res.Usage.CompletionTokens, err)
	// Output: "The answer is 42" stop 17 <nil>
}

// The backend counts what the engine asked of it, which makes prefix reuse
// and chunked prefill visible.
func ExampleBackend() {
	b := enginetest.NewBackend("ok", 0)
	eng, err := engine.New(b, enginetest.ByteTokenizer{}, engine.WithPrefillChunk(4))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	ctx := context.Background()
	_, _, _ = eng.Generate(ctx, engine.Request{Prompt: "0123456789"})
	fmt.Printf("%+v\n", b.Stats())
	_, res, _ := eng.Generate(ctx, engine.Request{Prompt: "0123456789ok!"})
	fmt.Println("reused", res.Usage.CachedTokens, "of", res.Usage.PromptTokens)
	// Output:
	// {Forwards:5 Positions:12 Reserves:1 Reserved:522 Closed:false LastChunk:1 MaxChunk:4 Verifies:0 Admits:0 Decodes:0 Drops:0 MaxDecodeBatch:0 DecodeSlots:0}
	// reused 12 of 13
}
