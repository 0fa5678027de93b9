package reasoning_test

import (
	"fmt"

	"github.com/prism-local/prism/reasoning"
)

func ExampleSplitter() {
	s := reasoning.NewSplitter()
	var pieces []reasoning.Piece
	// Token pieces as an engine streams them; tags may be cut anywhere.
	for _, tok := range []string{"<th", "ink>", "Add", " 2+2", "</", "think>", "It", " is 4."} {
		pieces = s.Feed(pieces[:0], tok)
		for _, p := range pieces {
			fmt.Printf("%s: %q\n", p.Kind, p.Text)
		}
	}
	for _, p := range s.Flush(pieces[:0]) {
		fmt.Printf("%s: %q\n", p.Kind, p.Text)
	}
	fmt.Println("reasoning seen:", s.Seen())
	// Output:
	// reasoning: "Add"
	// reasoning: " 2+2"
	// content: "It"
	// content: " is 4."
	// reasoning seen: true
}

func ExampleSplit() {
	r := reasoning.Split("<think>The user greets me.</think>Hello!")
	fmt.Printf("%q %q %v\n", r.Reasoning, r.Content, r.HasReasoning)
	// Output: "The user greets me." "Hello!" true
}

func ExamplePromptOpensReasoning() {
	prompt := "<｜User｜>Why is the sky blue?<｜Assistant｜><think>\n"
	open := reasoning.PromptOpensReasoning(prompt)
	r := reasoning.Split("Rayleigh scattering.</think>Because of Rayleigh scattering.", reasoning.WithReasoningStart(open))
	fmt.Println(open)
	fmt.Printf("%q | %q\n", r.Reasoning, r.Content)
	// Output:
	// true
	// "Rayleigh scattering." | "Because of Rayleigh scattering."
}

func ExampleFromOllama() {
	r := reasoning.FromOllama("Greeting.", "Hi!")
	fmt.Printf("%q %q %v\n", r.Reasoning, r.Content, r.HasReasoning)
	// Output: "Greeting." "Hi!" true
}

func ExampleWithHarmony() {
	out := "<|channel|>analysis<|message|>Simple question.<|end|>" +
		"<|start|>assistant<|channel|>final<|message|>Paris.<|return|>"
	r := reasoning.Split(out, reasoning.WithHarmony())
	fmt.Printf("%q %q\n", r.Reasoning, r.Content)
	// Output: "Simple question." "Paris."
}
