//go:build cgo

package prism_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/templates"
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
	fmt.Println(s.Result().FinishReason, "on", e.Info().Device)
	// Output:
	// Hello from Prism!
	// stop on cpu
}

// Build a model's Chat once, next to its engine, and render every prompt
// through it. The demo model's tokenizer (Llama-2's) ships no chat
// template, so the built-in format renders the conversation and the
// Prompt says so.
func ExampleLoadChat() {
	dir, err := demoModel()
	if err != nil {
		fmt.Println(err)
		return
	}
	chat, err := prism.LoadChat(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := chat.Render(context.Background(), templates.Input{
		Messages:            []templates.Message{{Role: "user", Content: templates.Text("Who are you?")}},
		AddGenerationPrompt: true,
	})
	if err != nil {
		fmt.Println(err) // with tools, a *templates.TemplateRenderError
		return
	}
	fmt.Printf("%q\nfallback: %v (%v)\n", p.Text, p.Fallback, p.FallbackCause)
	// Output:
	// "<|im_start|>user\nWho are you?<|im_end|>\n<|im_start|>assistant\n"
	// fallback: true (the model has no chat template)
}
