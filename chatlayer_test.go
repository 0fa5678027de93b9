//go:build cgo

package prism_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/prism-local/prism/errcode"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/internal/scripted"
	"github.com/prism-local/prism/templates"
)

const (
	thinkAnswer = "<think>\nThe user greets me.\n</think>\n\nHello there, friend."
	jsonAnswer  = `{"city": "Paris", "temperature": 21}`
	toolAnswer  = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	twoCalls    = toolAnswer + "\n" + toolAnswer
	// loopCalls is a model caught in a loop: one call and then the same
	// call four more times.
	loopCalls = twoCalls + "\n" + twoCalls + "\n" + toolAnswer
)

// chatModels are scripted models over the real Qwen3 tokenizer and chat
// template, written once per test binary: "weather" calls get_weather,
// "twice" calls it twice, "json" answers jsonAnswer, "think" thinks first,
// "small" is think in a window too small for a long message, "broken" has
// a graph that is not ONNX, "fails" a template that always fails.
var (
	chatOnce sync.Once
	chatRoot string
	chatErr  error
)

func writeChatModels() (string, error) {
	chatOnce.Do(func() {
		ctx := context.Background()
		tokDir, err := fixtures.FetchTokenizer(ctx, "qwen3")
		if err != nil {
			chatErr = &fixtureError{err}
			return
		}
		w, err := scripted.New(tokDir, "<|im_end|>")
		if err != nil {
			chatErr = err
			return
		}
		chatRoot = filepath.Join(testRoot, "chat")
		for _, m := range []scripted.Model{
			{Name: "weather", Answer: toolAnswer}, {Name: "twice", Answer: twoCalls}, {Name: "loop", Answer: loopCalls}, {Name: "json", Answer: jsonAnswer},
			{Name: "think", Answer: thinkAnswer, Context: 4096}, {Name: "small", Answer: thinkAnswer, Context: 48},
			{Name: "broken", Answer: thinkAnswer}, {Name: "fails", Answer: thinkAnswer},
		} {
			if chatErr = w.Write(ctx, chatRoot, m); chatErr != nil {
				return
			}
		}
		broken := filepath.Join(chatRoot, "broken", onnxgen.OptimumModelFile)
		if chatErr = os.WriteFile(broken, []byte("not an onnx graph"), 0o644); chatErr != nil {
			return
		}
		chatErr = setTemplate(filepath.Join(chatRoot, "fails", "tokenizer_config.json"), `{{ raise_exception('this template always fails') }}`)
	})
	return chatRoot, chatErr
}

// scriptedModel is the folder of the scripted chat model name, for the
// examples (which cannot skip: they need the fixtures).
func scriptedModel(name string) string {
	root, err := writeChatModels()
	if err != nil {
		panic(err)
	}
	return filepath.Join(root, name)
}

// chatModel is scriptedModel for a test: a fixture that cannot be had
// skips it outside CI.
func chatModel(t *testing.T, name string) string {
	t.Helper()
	root, err := writeChatModels()
	if fe := (*fixtureError)(nil); errors.As(err, &fe) {
		fixtures.Unavailable(t, "chat models' tokenizer: %v", fe)
	}
	if err != nil {
		t.Fatalf("chat models: %v", err)
	}
	return filepath.Join(root, name)
}

func setTemplate(path, tmpl string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	cfg["chat_template"] = tmpl
	out, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// newChat is the chat layer over a Manager whose loader opens the models
// with the tokenizer of the chat's Models.
func newChat(t *testing.T) *prism.EngineChat {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	quiet := prism.WithLogger(log)
	models := prism.NewModels(log)
	mgr, err := engine.NewManager(models.Loader(prism.WithORTLibrary(fixtures.ORTLib(t)), prism.WithDevice("cpu"), prism.WithoutLoadLock(), quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return prism.NewEngineChat(mgr, models, quiet)
}

// events reads a stream whole.
func events(t *testing.T, st *prism.ChatStream) []prism.Event {
	t.Helper()
	defer st.Close()
	var out []prism.Event
	for st.Next() {
		out = append(out, st.Event())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChatToolCallRequired(t *testing.T) {
	c := newChat(t)
	st, err := c.ChatStream(t.Context(), chatModel(t, "weather"), prism.ChatRequest{Messages: user("Weather in Paris?"),
		Tools: []prism.Tool{weatherTool}, ToolChoice: prism.ToolChoice{Mode: prism.ToolRequired}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var args strings.Builder
	var end prism.Event
	for _, e := range events(t, st) {
		switch e.Kind {
		case prism.EventToolCallBegin:
			if e.Call.Name != "get_weather" || e.Call.ID == "" || e.Call.Index != 0 {
				t.Errorf("begin = %+v", e.Call)
			}
		case prism.EventToolCallArgs:
			args.WriteString(e.Call.Arguments)
			if len(kinds) > 0 && kinds[len(kinds)-1] == "tool_call_args" {
				continue
			}
		case prism.EventEnd:
			end = e
		}
		kinds = append(kinds, e.Kind.String())
	}
	if got := strings.Join(kinds, " "); got != "tool_call_begin tool_call_args tool_call_end end" {
		t.Errorf("events: %s", got)
	}
	if args.String() != `{"city": "Paris"}` {
		t.Errorf("arguments %q", args.String())
	}
	if end.Finish != prism.FinishToolCalls || end.Usage.PromptTokens == 0 || end.Usage.CompletionTokens == 0 {
		t.Errorf("end = %+v", end)
	}
}

func TestChatSerialToolCalls(t *testing.T) {
	c := newChat(t)
	for _, serial := range []bool{false, true} {
		msg, err := prism.Complete(t.Context(), c, chatModel(t, "twice"), prism.ChatRequest{Messages: user("Weather in Paris?"),
			Tools: []prism.Tool{weatherTool}, SerialToolCalls: serial})
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if serial {
			want = 1
		}
		if len(msg.ToolCalls) != want || msg.Finish != prism.FinishToolCalls {
			t.Errorf("serial %v: %d calls (%s), want %d", serial, len(msg.ToolCalls), msg.Finish, want)
		}
	}
}

// A model that repeats a call stops at the first repeat, with a warning
// naming it; AllowRepeatedCalls lets it go on.
func TestChatRepeatedCallStops(t *testing.T) {
	c := newChat(t)
	for _, allow := range []bool{false, true} {
		msg, err := prism.Complete(t.Context(), c, chatModel(t, "loop"), prism.ChatRequest{Messages: user("Weather in Paris?"),
			Tools: []prism.Tool{weatherTool}, AllowRepeatedCalls: allow})
		if err != nil {
			t.Fatal(err)
		}
		want, warned := 2, true
		if allow {
			want, warned = 5, false
		}
		if len(msg.ToolCalls) != want || msg.Finish != prism.FinishToolCalls || (len(msg.Warnings) == 1) != warned {
			t.Errorf("allow %v: %d calls (%s), warnings %q; want %d", allow, len(msg.ToolCalls), msg.Finish, msg.Warnings, want)
		}
		if warned && len(msg.Warnings) == 1 && !strings.Contains(msg.Warnings[0], "get_weather with the same arguments") {
			t.Errorf("warning %q", msg.Warnings[0])
		}
	}
}

// A call the token limit cuts stays a call, as OpenAI returns it: finish
// reason length, the partial arguments, and none of its text as content.
func TestChatCallCutByLength(t *testing.T) {
	c := newChat(t)
	for _, max := range []int{12, 16} {
		st, err := c.ChatStream(t.Context(), chatModel(t, "weather"), prism.ChatRequest{Messages: user("Weather in Paris?"),
			Tools: []prism.Tool{weatherTool}, MaxTokens: max})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := st.Collect()
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		if msg.Finish != prism.FinishLength || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Name != "get_weather" || msg.Content != "" {
			t.Errorf("max %d: finish %s, calls %+v, content %q", max, msg.Finish, msg.ToolCalls, msg.Content)
			continue
		}
		if args := msg.ToolCalls[0].Arguments; json.Valid([]byte(args)) || !strings.HasPrefix(toolAnswer[strings.Index(toolAnswer, `{"city"`):], args) {
			t.Errorf("max %d: arguments %q, want a cut prefix of the call's", max, args)
		}
	}
}

func TestChatSchemaAnswer(t *testing.T) {
	c := newChat(t)
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["city","temperature"],
		"properties":{"city":{"type":"string"},"temperature":{"type":"integer"}}}`)
	msg, err := prism.Complete(t.Context(), c, chatModel(t, "json"), prism.ChatRequest{Messages: user("Weather?"),
		ResponseFormat: prism.JSONSchema(schema)})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		City        string
		Temperature int
	}
	if err := json.Unmarshal([]byte(msg.Content), &v); err != nil || v.City != "Paris" || v.Temperature != 21 {
		t.Fatalf("content %q: %v", msg.Content, err)
	}
}

func TestChatReasoningApart(t *testing.T) {
	c := newChat(t)
	msg, err := prism.Complete(t.Context(), c, chatModel(t, "think"), prism.ChatRequest{Messages: user("Hi")})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(msg.Reasoning) != "The user greets me." || strings.TrimSpace(msg.Content) != "Hello there, friend." || !msg.HasReasoning {
		t.Fatalf("reasoning %q, content %q", msg.Reasoning, msg.Content)
	}
	if u := msg.Usage; u.ReasoningTokens == 0 || u.ReasoningTokens >= u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
}

// The logprobs entries spell the content, each step's after its text.
func TestChatLogprobsSpellContent(t *testing.T) {
	c := newChat(t)
	st, err := c.ChatStream(t.Context(), chatModel(t, "think"), prism.ChatRequest{Messages: user("Hi"), Logprobs: true, TopLogprobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var content, spelled strings.Builder
	for _, e := range events(t, st) {
		switch e.Kind {
		case prism.EventContent:
			content.WriteString(e.Text)
		case prism.EventLogprobs:
			for _, lp := range e.Logprobs {
				spelled.Write(lp.Bytes)
				if len(lp.Top) != 2 || lp.Logprob > 0 {
					t.Errorf("entry %+v", lp)
				}
			}
			if spelled.Len() > content.Len() {
				t.Errorf("entries ahead of the content: %q over %q", spelled.String(), content.String())
			}
		}
	}
	if spelled.String() != content.String() || strings.TrimSpace(content.String()) != "Hello there, friend." {
		t.Errorf("entries spell %q, content %q", spelled.String(), content.String())
	}
}

// Everything that can fail before the first event is ChatStream's error
// (spec I3), typed.
func TestChatFailsBeforeFirstEvent(t *testing.T) {
	c := newChat(t)
	long := strings.Repeat("word ", 200)
	cases := []struct {
		name, model string
		req         prism.ChatRequest
		check       func(error) bool
	}{
		{"template", "fails", prism.ChatRequest{Messages: user("Hi"), Tools: []prism.Tool{weatherTool}},
			func(err error) bool { var e *templates.TemplateRenderError; return errors.As(err, &e) }},
		{"load", "broken", prism.ChatRequest{Messages: user("Hi")},
			func(err error) bool { var e *engine.ModelLoadError; return errors.As(err, &e) }},
		{"constraint", "json", prism.ChatRequest{Messages: user("Hi"),
			ResponseFormat: prism.JSONSchema(json.RawMessage(`{"type":"string","format":"no-such-format"}`))},
			func(err error) bool {
				var e *grammar.SchemaError
				return errors.As(err, &e) && e.Param == "response_format.json_schema.schema"
			}},
		{"strict tool", "weather", prism.ChatRequest{Messages: user("Hi"), Tools: []prism.Tool{{Name: "f", Strict: true,
			Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","format":"no-such-format"}}}`)}}},
			func(err error) bool {
				var e *grammar.SchemaError
				return errors.As(err, &e) && e.Param == "tools[0].function.parameters"
			}},
		{"context length", "small", prism.ChatRequest{Messages: user(long)},
			func(err error) bool { var e *engine.ContextLengthError; return errors.As(err, &e) }},
		{"tool choice", "weather", prism.ChatRequest{Messages: user("Hi"), ToolChoice: prism.CallTool("nope"), Tools: []prism.Tool{weatherTool}},
			func(err error) bool { return errcode.Of(err) == "invalid_request_error" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := c.ChatStream(t.Context(), chatModel(t, tc.model), tc.req)
			if err == nil {
				st.Close()
				t.Fatal("no error")
			}
			if st != nil || !tc.check(err) {
				t.Fatalf("%T %v", err, err)
			}
		})
	}
}

// A template that fails renders with the built-in format only without
// tools, and the stream says so; with tools it is an error (P11: never a
// silent tool drop).
func TestChatTemplateFallbackReported(t *testing.T) {
	c := newChat(t)
	st, err := c.ChatStream(t.Context(), chatModel(t, "fails"), prism.ChatRequest{Messages: user("Hi")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.TemplateFallback == nil {
		t.Fatal("fallback not reported")
	}
}

// The second turn of a conversation reuses the first's prefix.
func TestChatPrefixReuse(t *testing.T) {
	c := newChat(t)
	model := chatModel(t, "think")
	msgs := user("Hi")
	var cached []int
	for range 3 {
		msg, err := prism.Complete(t.Context(), c, model, prism.ChatRequest{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, msg.Usage.CachedTokens)
		r := msg.Reasoning
		msgs = append(msgs, prism.Message{Role: "assistant", Content: prism.Text(msg.Content), Reasoning: &r}, prism.User("And again?"))
	}
	if cached[1] == 0 || cached[2] <= cached[1] {
		t.Fatalf("cached tokens per turn %v: want growing after the first", cached)
	}
}
