package forecast_test

import (
	"context"
	"os"
	"testing"

	"example.com/forecast"
	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
)

// fake is a ChatBackend that answers with a script and keeps the request.
type fake struct {
	events []prism.Event
	got    prism.ChatRequest
}

func (f *fake) ChatStream(_ context.Context, _ string, req prism.ChatRequest) (*prism.ChatStream, error) {
	f.got = req
	return prism.ScriptedStream(nil, f.events...), nil
}

func TestCityWithAFake(t *testing.T) {
	f := &fake{events: []prism.Event{
		{Kind: prism.EventToolCallBegin, Call: prism.CallEvent{Index: 0, ID: "call_1", Name: "get_weather"}},
		{Kind: prism.EventToolCallArgs, Call: prism.CallEvent{Index: 0, Arguments: `{"city": "Oslo"}`}},
		{Kind: prism.EventToolCallEnd, Call: prism.CallEvent{Index: 0}},
		{Kind: prism.EventEnd, Finish: prism.FinishToolCalls},
	}}
	city, err := forecast.City(t.Context(), f, "any", "Is it cold in Oslo?")
	if err != nil || city != "Oslo" {
		t.Fatalf("City = %q, %v", city, err)
	}
	if f.got.ToolChoice.Mode != prism.ToolRequired || len(f.got.Tools) != 1 {
		t.Errorf("request %+v", f.got)
	}
}

func TestReportWithAFake(t *testing.T) {
	f := &fake{events: []prism.Event{{Kind: prism.EventContent, Text: `{"city": "Oslo", "temperature": -3}`}}}
	w, err := forecast.Report(t.Context(), f, "any", "Oslo")
	if err != nil || w != (forecast.Weather{City: "Oslo", Temperature: -3}) {
		t.Fatalf("Report = %+v, %v", w, err)
	}
	if f.got.ResponseFormat.Type != prism.FormatJSONSchema {
		t.Errorf("response format %+v", f.got.ResponseFormat)
	}
}

// realChat is the chat layer over the model folders Prism's own test
// names in FORECAST_WEATHER_MODEL and FORECAST_JSON_MODEL; skipped when
// run alone.
func realChat(t *testing.T, name string) (*prism.EngineChat, string) {
	t.Helper()
	dir := os.Getenv(name)
	if dir == "" {
		t.Skip(name + " names no model folder")
	}
	models := prism.NewModels(nil)
	mgr, err := engine.NewManager(models.Loader(prism.WithEnv(os.Environ()), prism.WithDevice("cpu"), prism.WithoutLoadLock()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return prism.NewEngineChat(mgr, models), dir
}

func TestCityConstrained(t *testing.T) {
	chat, dir := realChat(t, "FORECAST_WEATHER_MODEL")
	city, err := forecast.City(t.Context(), chat, dir, "What is the weather in Paris?")
	if err != nil || city != "Paris" {
		t.Fatalf("City = %q, %v", city, err)
	}
}

func TestReportConstrained(t *testing.T) {
	chat, dir := realChat(t, "FORECAST_JSON_MODEL")
	w, err := forecast.Report(t.Context(), chat, dir, "Paris")
	if err != nil || w.City != "Paris" {
		t.Fatalf("Report = %+v, %v", w, err)
	}
}
