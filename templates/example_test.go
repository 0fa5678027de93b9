package templates_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prism-local/prism/templates"
)

// A model's Chat is built once from the templates and special tokens its
// folder declares (here given as values; ReadTokenizerConfig reads them
// from a folder), and renders every request.
func ExampleChat_Render() {
	chat := templates.NewChat("acme/chat-2b", templates.ChatTemplates{
		Named: map[string]string{"default": `{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if tools %}{% for t in tools %}{{ t | tojson }}
{% endfor %}{% endif %}{% if add_generation_prompt %}<|assistant|>{% endif %}`},
		BOSToken: "<s>",
	})
	p, err := chat.Render(context.Background(), templates.Input{
		Messages: []templates.Message{{Role: "user", Content: templates.Text("Weather in Zürich?")}},
		// The tool's keys reach the prompt in the order the caller sent them.
		Tools:               []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{}}}`)},
		AddGenerationPrompt: true,
	})
	fmt.Println(p.Text, p.Fallback, err)
	// Output:
	// <s><|user|>Weather in Zürich?
	// {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
	// <|assistant|> false <nil>
}

// When the model's template fails (here it raises, as Gemma's does when
// roles do not alternate), a request without tools gets the built-in
// format, reported in the Prompt and logged; a request with tools is
// refused, because the built-in format would drop them.
func ExampleChat_Render_fallback() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	chat := templates.NewChat("acme/chat-2b", templates.ChatTemplates{
		Named: map[string]string{"default": `{{ raise_exception('Conversation roles must alternate') }}`},
	}, templates.WithLogger(logger))
	in := templates.Input{Messages: []templates.Message{{Role: "user", Content: templates.Text("hi")}}, AddGenerationPrompt: true}

	p, _ := chat.Render(context.Background(), in)
	fmt.Printf("fallback=%v %q\n", p.Fallback, p.Text)

	in.Tools = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}
	_, err := chat.Render(context.Background(), in)
	var tre *templates.TemplateRenderError
	fmt.Println(errors.As(err, &tre), tre.Code())
	// Output:
	// level=WARN msg="chat template failed" model=acme/chat-2b cause="chat template raised: Conversation roles must alternate" blocked=false tools=false
	// fallback=true "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
	// level=WARN msg="chat template failed" model=acme/chat-2b cause="chat template raised: Conversation roles must alternate" blocked=false tools=true
	// true template_render_failed
}

// An assistant message that only calls tools has content null, as OpenAI
// clients send it; a template that uses the content as a string fails on
// it (as it does under Jinja), so Render renders the request again with ""
// in its place and says which messages it changed.
func ExampleChat_Render_nullContent() {
	chat := templates.NewChat("acme/chat-2b", templates.ChatTemplates{
		Named: map[string]string{"default": `{% for m in messages %}<|{{ m.role }}|>{{ m.content.strip() }}{% endfor %}`},
	}, templates.WithLogger(slog.New(slog.DiscardHandler)))
	call := templates.ToolCall{ID: "c1", Type: "function", Function: templates.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{}`)}}
	p, err := chat.Render(context.Background(), templates.Input{Messages: []templates.Message{
		{Role: "user", Content: templates.Text("Weather in Zürich?")},
		{Role: "assistant", Content: templates.Null(), ToolCalls: []templates.ToolCall{call}},
	}})
	fmt.Printf("%q %v %v\n", p.Text, p.NullAsEmpty, err)
	// Output:
	// "<|user|>Weather in Zürich?<|assistant|>" [1] <nil>
}

// A template that uses a construct Prism's evaluator does not cover is
// refused when the Chat is built; Err names the construct and its line.
func ExampleChat_Err() {
	chat := templates.NewChat("acme/chat-2b", templates.ChatTemplates{
		Named: map[string]string{"default": "{% for m in messages %}\n{{ m.content | wordwrap(40) }}\n{% endfor %}"},
	}, templates.WithLogger(slog.New(slog.DiscardHandler)))
	fmt.Println(chat.Err())
	// Output:
	// default chat template: chat template parse failed at line 2: filter "wordwrap" is not supported by Prism's evaluator
}

func ExampleSupportsTools() {
	fmt.Println(templates.SupportsTools(`{% if tools %}{{ tools | tojson }}{% endif %}`))
	fmt.Println(templates.SupportsTools(`{# tools are not supported #}You may not use tools.`))
	// Output:
	// true
	// false
}
