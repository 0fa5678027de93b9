package engine_test

import (
	"context"
	"fmt"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

func ExampleEngine_Stream() {
	// A real *engine.Engine over a scripted fake backend; prism.Open gives
	// one over a real model.
	eng, err := enginetest.New("Hello from Prism!")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer eng.Close()

	s, err := eng.Stream(context.Background(), engine.Request{
		Prompt:    "Say hello",
		MaxTokens: 64,
		Stop:      []string{"!"},
	})
	if err != nil {
		fmt.Println("error:", engine.CodeOf(err), err)
		return
	}
	defer s.Close()
	for s.Next() {
		fmt.Print(string(s.Token().Piece))
	}
	if err := s.Err(); err != nil {
		fmt.Println("error:", err)
		return
	}
	res := s.Result()
	fmt.Printf("\nfinish=%s prompt=%d completion=%d\n",
		res.FinishReason, res.Usage.PromptTokens, res.Usage.CompletionTokens)
	// Output:
	// Hello from Prism
	// finish=stop prompt=9 completion=17
}
