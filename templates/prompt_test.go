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

func TestRenderPrompt(t *testing.T) {
	good, err := New(`{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if tools %}+tools{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := New(`{{ raise_exception('no tools for you') }}`)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: Text("hi")}}
	tools := sampleTools()[:1]
	tests := []struct {
		name     string
		tmpl     *Template
		tools    []json.RawMessage
		want     string
		fallback bool
		wantErr  bool
	}{
		{"renders", good, nil, "[user]hi", false, false},
		{"renders_tools", good, tools, "[user]hi+tools", false, false},
		{"fallback_without_tools", bad, nil, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", true, false},
		{"no_template_without_tools", nil, nil, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", true, false},
		{"refused_with_tools", bad, tools, "", false, true},
		{"no_template_with_tools", nil, tools, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			in := Input{Messages: msgs, Tools: tt.tools, AddGenerationPrompt: true}
			p, err := RenderPrompt(context.Background(), tt.tmpl, "acme/model-7b", in, logger)
			if tt.wantErr {
				var tre *TemplateRenderError
				if !errors.As(err, &tre) || tre.Code() != CodeTemplateRenderFailed || tre.Model != "acme/model-7b" {
					t.Fatalf("want TemplateRenderError, got %v", err)
				}
				if !strings.Contains(err.Error(), "acme/model-7b") {
					t.Fatalf("error does not name the model: %v", err)
				}
				if !strings.Contains(logs.String(), "acme/model-7b") {
					t.Fatalf("failure not logged with the model id: %s", logs.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Text != tt.want || p.Fallback != tt.fallback {
				t.Fatalf("got %q fallback=%v", p.Text, p.Fallback)
			}
			if tt.fallback {
				if p.FallbackCause == nil {
					t.Fatal("fallback without a cause")
				}
				if !strings.Contains(logs.String(), "model=acme/model-7b") || !strings.Contains(logs.String(), "cause=") {
					t.Fatalf("fallback not logged with model and cause: %s", logs.String())
				}
			}
		})
	}
}

func TestRenderPromptKeepsContextErrors(t *testing.T) {
	tpl, err := New(`hi`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RenderPrompt(ctx, tpl, "m", Input{}, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestBuiltinFormatToolCalls(t *testing.T) {
	in := Input{Messages: []Message{
		{Role: "assistant", Content: Text("Checking."), ToolCalls: []ToolCall{{Function: FunctionCall{Name: "f", Arguments: raw(`{"b":1,"a":2}`)}}}},
		{Role: "tool", Content: Text("42")},
	}}
	want := "<|im_start|>assistant\nChecking.\n{\"name\": \"f\", \"arguments\": {\"b\":1,\"a\":2}}<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n"
	if got := BuiltinFormat(in); got != want {
		t.Fatalf("got %q", got)
	}
}

func TestSupportsTools(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{`{% if tools %}x{% endif %}`, true},
		{`{%- for t in tools -%}{{ t | tojson }}{% endfor %}`, true},
		{`{{ tools | length }}`, true},
		{`{% set t = tools %}`, true},
		{`{% if not tools is none %}{% endif %}`, true},
		{`You may use tools. {{ messages[0].content }}`, false},
		{`{# tools are not supported #}{{ x }}`, false},
		{`{{ "<tools></tools>" }}`, false},
		{`{% if tools_dict %}{% endif %}{{ tool_registry }}`, false},
		{`{{ message.tools }}`, false},
		{`{% raw %}{{ tools }}{% endraw %}`, false},
	}
	for _, tt := range tests {
		if got := SupportsTools(tt.src); got != tt.want {
			t.Errorf("SupportsTools(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
	for fam, want := range map[string]bool{"qwen3": true, "llama3_1": false, "gemma3": false, "deepseek_v3": false} {
		src, _, _ := familyTemplate(t, fam)
		if got := SupportsTools(src); got != want {
			t.Errorf("%s: SupportsTools = %v, want %v", fam, got, want)
		}
	}
}

func TestTokenizerConfigForms(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tokenizer_config.json", `{"bos_token":{"__type":"AddedToken","content":"<s>"},"eos_token":"</s>",
		"chat_template":[{"name":"default","template":"D{{ bos_token }}"},{"name":"tool_use","template":"T{{ tools | length }}"}]}`)
	chat, err := FromTokenizerConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out, err := chat.Render(ctx, Input{}); err != nil || out != "D<s>" {
		t.Fatalf("default: %q %v", out, err)
	}
	if out, err := chat.Render(ctx, Input{Tools: sampleTools()[:2]}); err != nil || out != "T2" {
		t.Fatalf("tool_use: %q %v", out, err)
	}
	write("chat_template.jinja", "J{{ eos_token }}\n")
	chat, err = FromTokenizerConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := chat.Render(ctx, Input{}); err != nil || out != "J</s>" {
		t.Fatalf("chat_template.jinja: %q %v", out, err)
	}
	for _, fam := range []string{"gptoss", "llama2"} {
		chat, err := FromTokenizerConfig(tokenizerDir(t, fam))
		if err != nil {
			t.Fatal(err)
		}
		if chat.Default != nil || chat.BOSToken == "" {
			t.Fatalf("%s: want no template and a BOS token, got %+v", fam, chat)
		}
		if _, err := chat.Render(ctx, Input{}); !errors.Is(err, ErrNoTemplate) {
			t.Fatalf("%s: got %v", fam, err)
		}
	}
}

func TestMessageJSON(t *testing.T) {
	var m Message
	body := `{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}`
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil || string(out) != body {
		t.Fatalf("round trip: %s %v", out, err)
	}
	for _, c := range []string{`"text"`, `[{"type":"text","text":"a"}]`, `null`} {
		var got Content
		if err := json.Unmarshal([]byte(c), &got); err != nil {
			t.Fatal(err)
		}
		back, _ := json.Marshal(got)
		if string(back) != c {
			t.Fatalf("%s -> %s", c, back)
		}
	}
	if err := json.Unmarshal([]byte(`42`), new(Content)); err == nil {
		t.Fatal("a number is not content")
	}
}

func TestFormatNumber(t *testing.T) {
	tests := map[float64]string{
		0.1: "0.1", 1.5: "1.5", -2.25: "-2.25", 1e21: "1e+21", 1.5e-7: "1.5e-7", 123456789012: "123456789012",
		0.000001: "0.000001", 1e-7: "1e-7", 3.14159: "3.14159",
	}
	for f, want := range tests {
		if got := formatNumber(f); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestJSONStrings(t *testing.T) {
	var sb strings.Builder
	writeJSONString(&sb, "a\"b\\c\n\t\x01\x7fé😀", false)
	if got, want := sb.String(), `"a\"b\\c\n\t\u0001`+"\x7fé😀"+`"`; got != want {
		t.Fatalf("got %s want %s", got, want)
	}
	sb.Reset()
	writeJSONString(&sb, "é😀\x7f", true)
	if got, want := sb.String(), `"\u00e9\ud83d\ude00\u007f"`; got != want {
		t.Fatalf("ascii: got %s want %s", got, want)
	}
}

func TestDecodeJSONKeepsOrderAndRejectsJunk(t *testing.T) {
	tpl, err := New(`{{ extra | tojson }}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tpl.Render(context.Background(), Input{Extra: map[string]any{"extra": raw(`{"z": 1, "a": [1.0, 2.5, -0, "x\u00e9"], "m": {}, "z": 3}`)}})
	if err != nil || out != `{"z": 3, "a": [1, 2.5, 0, "xé"], "m": {}}` {
		t.Fatalf("got %s %v", out, err)
	}
	for _, bad := range []string{`{`, `[1,]`, `{"a" 1}`, `01`, `1.`, `"\x01"`, `tru`, `{} x`, `+1`} {
		if _, err := decodeJSON([]byte(bad), nil); err == nil {
			t.Errorf("decodeJSON(%q) accepted", bad)
		}
	}
}

// TestConcurrentRenders renders one parsed template from several
// goroutines at once, as a server does; -race checks the sharing.
func TestConcurrentRenders(t *testing.T) {
	src, bos, eos := familyTemplate(t, "qwen3")
	tpl, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	in := benchInput()
	in.BOSToken, in.EOSToken = bos, eos
	want, err := tpl.Render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 4
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for range 5 {
				got, err := tpl.Render(context.Background(), in)
				if err == nil && got != want {
					err = errors.New("concurrent render differs")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestExtraGoValues(t *testing.T) {
	tpl, err := New(`{{ a }}|{{ b + 1 }}|{{ c | tojson }}|{{ d | tojson }}|{% if e %}on{% endif %}|{{ f | tojson }}`)
	if err != nil {
		t.Fatal(err)
	}
	type opts struct {
		Zeta  int    `json:"zeta"`
		Alpha string `json:"alpha"`
	}
	out, err := tpl.Render(context.Background(), Input{Extra: map[string]any{
		"a": "x", "b": int64(41), "c": []string{"p", "q"}, "d": opts{1, "z"}, "e": true,
		"f": map[string]any{"y": 1.5, "b": nil},
	}})
	want := `x|42|["p", "q"]|{"zeta": 1, "alpha": "z"}|on|{"b": null, "y": 1.5}`
	if err != nil || out != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
}
