package engine_test

import (
	"context"
	"fmt"
	"github.com/prism-local/prism/errcode"
	"time"

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
		fmt.Println("error:", errcode.Of(err), err)
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

func ExampleManager_Use() {
	// The loader is prism.Open in a real program.
	load := func(ctx context.Context, model string) (*engine.Engine, error) {
		return enginetest.New("Hi, I am " + model + ".")
	}
	m, err := engine.NewManager(load, engine.WithMaxQueue(8), engine.WithQueueTimeout(30*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	isAlive := func() bool { return true } // e.g. the HTTP request's context is not done
	lease, err := m.Use(context.Background(), "small-model", isAlive)
	if err != nil {
		// *ServerBusyError → 503 with Retry-After; *ClientDisconnectedError → write nothing.
		fmt.Println(errcode.Of(err), err)
		return
	}
	text, res, err := lease.Engine().Generate(context.Background(), engine.Request{Prompt: "Who are you?"})
	lease.Release()
	fmt.Println(text, res.FinishReason, err)

	u, _ := m.Unload(context.Background())
	fmt.Printf("unloaded=%v model=%s\n", u.Unloaded, u.Model)
	// Output:
	// Hi, I am small-model. stop <nil>
	// unloaded=true model=small-model
}

func ExampleRequest_logprobs() {
	eng, err := enginetest.New("Hi")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer eng.Close()
	s, err := eng.Stream(context.Background(), engine.Request{Prompt: "Say hi", Logprobs: true, TopLogprobs: 2})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer s.Close()
	for s.Next() {
		tok := s.Token() // TopLogprobs, like Piece, is valid until the next Next
		fmt.Printf("id %d %q logprob %.2f; most likely: id %d, then id %d at %.2f\n",
			tok.ID, tok.Piece, tok.Logprob, tok.TopLogprobs[0].ID, tok.TopLogprobs[1].ID, tok.TopLogprobs[1].Logprob)
	}
	// Output:
	// id 72 "H" logprob -0.00; most likely: id 72, then id 0 at -30.00
	// id 105 "i" logprob -0.00; most likely: id 105, then id 0 at -30.00
	// id 256 "" logprob -0.00; most likely: id 256, then id 0 at -30.00
}
