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

func ExampleTemplate_Render() {
	tpl, err := templates.New(`{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if tools %}{% for t in tools %}{{ t | tojson }}
{% endfor %}{% endif %}{% if add_generation_prompt %}<|assistant|>{% endif %}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := tpl.Render(context.Background(), templates.Input{
		Messages: []templates.Message{{Role: "user", Content: templates.Text("Weather in Zürich?")}},
		// The tool's keys reach the prompt in the order the caller sent them.
		Tools:               []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{}}}`)},
		AddGenerationPrompt: true,
	})
	fmt.Println(out, err)
	// Output:
	// <|user|>Weather in Zürich?
	// {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
	// <|assistant|> <nil>
}

func ExampleRenderPrompt() {
	// A template that raises, as Gemma's does when roles do not alternate.
	tpl, _ := templates.New(`{{ raise_exception('Conversation roles must alternate') }}`)
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	in := templates.Input{Messages: []templates.Message{{Role: "user", Content: templates.Text("hi")}}, AddGenerationPrompt: true}

	// Without tools: logged, and the built-in format stands in.
	p, _ := templates.RenderPrompt(context.Background(), tpl, "acme/chat-2b", in, logger)
	fmt.Printf("fallback=%v %q\n", p.Fallback, p.Text)

	// With tools: refused, because the built-in format would drop them.
	in.Tools = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}
	_, err := templates.RenderPrompt(context.Background(), tpl, "acme/chat-2b", in, logger)
	var tre *templates.TemplateRenderError
	fmt.Println(errors.As(err, &tre), tre.Code())
	// Output:
	// level=WARN msg="chat template failed; using the built-in format" model=acme/chat-2b cause="chat template raised: Conversation roles must alternate" blocked=false
	// fallback=true "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
	// level=WARN msg="chat template failed on a request with tools" model=acme/chat-2b cause="chat template raised: Conversation roles must alternate"
	// true template_render_failed
}

func ExampleSupportsTools() {
	fmt.Println(templates.SupportsTools(`{% if tools %}{{ tools | tojson }}{% endif %}`))
	fmt.Println(templates.SupportsTools(`{# tools are not supported #}You may not use tools.`))
	// Output:
	// true
	// false
}
