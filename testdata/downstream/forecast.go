// Package forecast is the code a service downstream of Prism writes over
// its chat layer: a constrained tool call and a schema answer, in its own
// module, importing only Prism's public packages. Prism's tests run its
// tests (TestDownstreamModule), against a fake backend and against
// scripted models.
package forecast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/prism-local/prism"
)

// WeatherTool is the tool the model must call to name the city.
var WeatherTool = prism.Tool{Name: "get_weather", Description: "Current weather in a city", Strict: true,
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}

// Weather is the answer Report asks for.
type Weather struct {
	City        string `json:"city"`
	Temperature int    `json:"temperature"`
}

// weatherSchema is Weather's JSON Schema.
var weatherSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["city","temperature"],
	"properties":{"city":{"type":"string"},"temperature":{"type":"integer"}}}`)

// City asks model which city question is about: the model must call
// get_weather, and the call's city is the answer.
func City(ctx context.Context, b prism.ChatBackend, model, question string) (string, error) {
	msg, err := prism.Complete(ctx, b, model, prism.ChatRequest{
		Messages:   []prism.Message{prism.User(question)},
		Tools:      []prism.Tool{WeatherTool},
		ToolChoice: prism.ToolChoice{Mode: prism.ToolRequired},
	})
	if err != nil {
		return "", err
	}
	if len(msg.ToolCalls) == 0 {
		return "", errors.New("forecast: the model made no call")
	}
	var args struct {
		City string `json:"city"`
	}
	if err := json.Unmarshal([]byte(msg.ToolCalls[0].Arguments), &args); err != nil {
		return "", fmt.Errorf("forecast: arguments %q: %w", msg.ToolCalls[0].Arguments, err)
	}
	return args.City, nil
}

// Report asks model for the weather in city as a Weather value.
func Report(ctx context.Context, b prism.ChatBackend, model, city string) (Weather, error) {
	msg, err := prism.Complete(ctx, b, model, prism.ChatRequest{
		Messages:       []prism.Message{prism.User("The weather in " + city + ", as JSON.")},
		ResponseFormat: prism.JSONSchema(weatherSchema),
	})
	if err != nil {
		return Weather{}, err
	}
	var w Weather
	if err := json.Unmarshal([]byte(msg.Content), &w); err != nil {
		return Weather{}, fmt.Errorf("forecast: answer %q: %w", msg.Content, err)
	}
	return w, nil
}
