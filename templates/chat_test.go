package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatRender is the spec's rule for every way a model's template can
// fail (I7, P11), through the one entry point.
func TestChatRender(t *testing.T) {
	const builtin = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
	good := `{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if tools %}+tools{% endif %}`
	raises := `{{ raise_exception('no tools for you') }}`
	refused := "{{ messages | length }}\n{{ 'x' | center(9) }}"
	tools := sampleTools()[:1]
	tests := []struct {
		name     string
		named    map[string]string
		tools    []json.RawMessage
		want     string // "" for a *TemplateRenderError
		fallback bool
		logged   string // what the log must say, "" for nothing
	}{
		{"renders", map[string]string{"default": good}, nil, "[user]hi", false, ""},
		{"renders_tools", map[string]string{"default": good}, tools, "[user]hi+tools", false, ""},
		{"fails_without_tools", map[string]string{"default": raises}, nil, builtin, true, "no tools for you"},
		{"fails_with_tools", map[string]string{"default": raises}, tools, "", false, "no tools for you"},
		{"refused_without_tools", map[string]string{"default": refused}, nil, builtin, true, `filter \"center\"`},
		{"refused_with_tools", map[string]string{"default": refused}, tools, "", false, `filter \"center\"`},
		{"no_template_without_tools", nil, nil, builtin, true, "no chat template"},
		{"no_template_with_tools", nil, tools, "", false, "no chat template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			chat := NewChat("acme/model-7b", ChatTemplates{Named: tt.named}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			in := Input{Messages: []Message{{Role: "user", Content: Text("hi")}}, Tools: tt.tools, AddGenerationPrompt: true}
			p, err := chat.Render(t.Context(), in)
			if tt.logged != "" && (!strings.Contains(logs.String(), "model=acme/model-7b") || !strings.Contains(logs.String(), tt.logged)) {
				t.Errorf("the failure is not logged with the model id and %q:\n%s", tt.logged, logs.String())
			}
			if tt.want == "" {
				var tre *TemplateRenderError
				if !errors.As(err, &tre) || tre.Code() != CodeTemplateRenderFailed || tre.Model != "acme/model-7b" {
					t.Fatalf("want a TemplateRenderError, got %v", err)
				}
				if !strings.Contains(err.Error(), "acme/model-7b") {
					t.Fatalf("error does not name the model: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Text != tt.want || p.Fallback != tt.fallback || (p.FallbackCause != nil) != tt.fallback {
				t.Fatalf("got %q fallback=%v cause=%v", p.Text, p.Fallback, p.FallbackCause)
			}
		})
	}
}

// TestChatRefusalNamesConstructAndLine: a template the evaluator does
// not cover is refused when the Chat is built, and Err says what and
// where — in the source as given, before the whitespace rules and the
// conditional rewrite moved it.
func TestChatRefusalNamesConstructAndLine(t *testing.T) {
	tests := []struct {
		name, src, construct string
		line                 int
	}{
		{"filter", "{% for m in messages %}\n  {{ m.content }}\n{% endfor %}\n{{ 'x' | center(9) }}", `filter "center"`, 4},
		{"after_hoist", "{{ 'a' + (b if c else d) }}\n{%- if x -%}\n{{ y | wordwrap(3) }}{% endif %}", `filter "wordwrap"`, 3},
		{"test", "\n\n{% if x is escaped %}{% endif %}", `test "escaped"`, 3},
		{"method", "{{ x }}\n{{ 'a'.format(1) }}", `method "format"`, 2},
		{"include", "a\n{% include 'other.jinja' %}", `statement "include"`, 2},
		{"with", "{% with x = 1 %}{{ x }}{% endwith %}", `statement "with"`, 1},
		{"generation", "{% for m in messages %}\n  {%- generation %}\n{{ m.content }}{% endgeneration %}\n{% endfor %}\n\n  {{ m | xmlattr }}", `filter "xmlattr"`, 6},
		{"trimmed_lines", "{% if a %}\n{% if b %}\n{% endif %}\n{% endif %}\n{{ a is escaped }}", `test "escaped"`, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := NewChat("m", ChatTemplates{Named: map[string]string{"default": tt.src}}, WithLogger(slog.New(slog.DiscardHandler)))
			var te *TemplateError
			if err := chat.Err(); !errors.As(err, &te) {
				t.Fatalf("want a *TemplateError, got %v", err)
			}
			if te.Phase != "parse" || te.Construct != tt.construct || te.Line != tt.line || te.Code() != CodeTemplateRenderFailed {
				t.Fatalf("got phase %q construct %q line %d (%v), want %q at line %d", te.Phase, te.Construct, te.Line, te, tt.construct, tt.line)
			}
		})
	}
}

// TestParseErrorLine: a syntax error names the line of the source as
// given, though trim_blocks joined lines before the parser saw them.
func TestParseErrorLine(t *testing.T) {
	_, err := load("{% if a %}\n{% endif %}\n{% if b %}\n{{ (1 }}\n{% endif %}")
	var te *TemplateError
	if !errors.As(err, &te) || te.Line != 4 || strings.Contains(te.Message, "Line:") {
		t.Fatalf("want a parse error at line 4 without the rewritten position, got %v", err)
	}
}

func TestChatRenderKeepsContextErrors(t *testing.T) {
	chat := NewChat("m", ChatTemplates{Named: map[string]string{"default": "hi"}}, WithLogger(slog.New(slog.DiscardHandler)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := chat.Render(ctx, Input{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want the context's error, got %v", err)
	}
}

// TestChatTemplateChoice: tool_use for requests with tools, default
// otherwise, special tokens from the configuration (AddedToken objects
// too), chat_template.jinja beside the configuration.
func TestChatTemplateChoice(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *Chat {
		t.Helper()
		c, err := ReadTokenizerConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		return NewChat("m", *c, WithLogger(slog.New(slog.DiscardHandler)))
	}
	render := func(chat *Chat, in Input) string {
		t.Helper()
		p, err := chat.Render(t.Context(), in)
		if err != nil || p.Fallback {
			t.Fatalf("render: %+v %v", p, err)
		}
		return p.Text
	}
	write("tokenizer_config.json", `{"bos_token":{"__type":"AddedToken","content":"<s>"},"eos_token":"</s>",
		"chat_template":[{"name":"default","template":"D{{ bos_token }}"},{"name":"tool_use","template":"T{{ tools | length }}"}]}`)
	chat := load()
	if got := render(chat, Input{}); got != "D<s>" {
		t.Fatalf("default: %q", got)
	}
	if got := render(chat, Input{BOSToken: "<B>"}); got != "D<B>" {
		t.Fatalf("a token the input sets is kept: %q", got)
	}
	if got := render(chat, Input{Tools: sampleTools()[:2]}); got != "T2" {
		t.Fatalf("tool_use: %q", got)
	}
	if chat.Source(true) != "T{{ tools | length }}" || chat.Source(false) != "D{{ bos_token }}" || chat.Err() != nil {
		t.Fatalf("sources %q %q, err %v", chat.Source(true), chat.Source(false), chat.Err())
	}
	write("chat_template.jinja", "J{{ eos_token }}\n")
	if got := render(load(), Input{}); got != "J</s>" {
		t.Fatalf("chat_template.jinja: %q", got)
	}
	for _, fam := range []string{"gptoss", "llama2"} {
		c, err := ReadTokenizerConfig(tokenizerDir(t, fam))
		if err != nil {
			t.Fatal(err)
		}
		chat := NewChat(fam, *c, WithLogger(slog.New(slog.DiscardHandler)))
		p, err := chat.Render(t.Context(), Input{})
		if err != nil || !p.Fallback || !errors.Is(p.FallbackCause, ErrNoTemplate) || chat.Source(false) != "" || c.BOSToken == "" {
			t.Fatalf("%s: want the built-in format for want of a template and a BOS token, got %+v %v (bos %q)", fam, p, err, c.BOSToken)
		}
	}
}
