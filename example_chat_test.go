//go:build cgo

package prism_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
)

// A tool call the model must make: tool_choice required. The grammar
// compiled from the tool's schema writes the call; its arguments come
// whole in the message. (The folders here are tiny scripted models the
// tests write over the real Qwen3 tokenizer and chat template.)
func ExampleEngineChat_toolChoiceRequired() {
	models := prism.NewModels(nil)
	mgr, _ := engine.NewManager(models.Loader(prism.WithEnv(os.Environ()), prism.WithDevice("cpu")))
	defer mgr.Close()
	chat := prism.NewEngineChat(mgr, models)
	msg, err := prism.Complete(context.Background(), chat, scriptedModel("weather"), prism.ChatRequest{
		Messages: []prism.Message{prism.User("What is the weather in Paris?")},
		Tools: []prism.Tool{{Name: "get_weather", Strict: true,
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
		ToolChoice: prism.ToolChoice{Mode: prism.ToolRequired},
	})
	if err != nil {
		fmt.Println(err) // everything that fails before the answer begins: typed, nothing streamed
		return
	}
	fmt.Println(msg.Finish, msg.ToolCalls[0].Name, msg.ToolCalls[0].Arguments)
	// Output: tool_calls get_weather {"city": "Paris"}
}

// An answer valid for a JSON Schema: response_format json_schema.
func ExampleEngineChat_jsonSchema() {
	models := prism.NewModels(nil)
	mgr, _ := engine.NewManager(models.Loader(prism.WithEnv(os.Environ()), prism.WithDevice("cpu")))
	defer mgr.Close()
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["city","temperature"],
		"properties":{"city":{"type":"string"},"temperature":{"type":"integer"}}}`)
	msg, err := prism.Complete(context.Background(), prism.NewEngineChat(mgr, models), scriptedModel("json"), prism.ChatRequest{
		Messages:       []prism.Message{prism.User("The weather in Paris, as JSON.")},
		ResponseFormat: prism.JSONSchema(schema),
	})
	if err != nil {
		fmt.Println(err) // a schema the grammar cannot enforce is a *grammar.SchemaError
		return
	}
	var v struct {
		City        string `json:"city"`
		Temperature int    `json:"temperature"`
	}
	fmt.Println(json.Unmarshal([]byte(msg.Content), &v), v.City, v.Temperature)
	// Output: <nil> Paris 21
}

// A reasoning model's thoughts come apart from its answer.
func ExampleEngineChat_reasoning() {
	models := prism.NewModels(nil)
	mgr, _ := engine.NewManager(models.Loader(prism.WithEnv(os.Environ()), prism.WithDevice("cpu")))
	defer mgr.Close()
	msg, err := prism.Complete(context.Background(), prism.NewEngineChat(mgr, models), scriptedModel("think"), prism.ChatRequest{
		Messages:     []prism.Message{prism.User("Hi!")},
		TemplateVars: map[string]any{"enable_thinking": true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("thought: %q\nsaid: %q\n", strings.TrimSpace(msg.Reasoning), strings.TrimSpace(msg.Content))
	// Output:
	// thought: "The user greets me."
	// said: "Hello there, friend."
}

// A streamed answer: events as the model writes them, the usage last.
func ExampleChatStream() {
	models := prism.NewModels(nil)
	mgr, _ := engine.NewManager(models.Loader(prism.WithEnv(os.Environ()), prism.WithDevice("cpu")))
	defer mgr.Close()
	st, err := prism.NewEngineChat(mgr, models).ChatStream(context.Background(), scriptedModel("think"),
		prism.ChatRequest{Messages: []prism.Message{prism.User("Hi!")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	for st.Next() {
		switch e := st.Event(); e.Kind {
		case prism.EventContent:
			fmt.Print(e.Text)
		case prism.EventEnd:
			fmt.Println("\n", e.Finish, e.Usage.ReasoningTokens > 0)
		}
	}
	// Output:
	// Hello there, friend.
	//  stop true
}
