package reasoning

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/prism-local/prism/internal/fixtures"
)

// TestRealTemplatePrompts renders generation prompts through real chat
// templates and checks the open-think detection on them, and that a think
// block the Qwen3 template writes into history splits back the way the
// template itself splits it.
func TestRealTemplatePrompts(t *testing.T) {
	render := func(family string, vars map[string]any) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(fixtures.TokenizerDir(t, family), "tokenizer_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ChatTemplate string `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		tpl, err := gonja.FromString(cfg.ChatTemplate)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tpl.ExecuteToString(exec.NewContext(vars))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	user := []map[string]any{{"role": "user", "content": "Why is the sky blue?"}}
	tests := []struct {
		name   string
		family string
		vars   map[string]any
		want   bool
	}{
		{"qwen3 thinking on", "qwen3", map[string]any{"messages": user, "add_generation_prompt": true}, false},
		{"qwen3 thinking off", "qwen3", map[string]any{"messages": user, "add_generation_prompt": true, "enable_thinking": false}, false},
		{"deepseek v3", "deepseek_v3", map[string]any{"messages": user, "add_generation_prompt": true, "bos_token": ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prompt := render(tt.family, tt.vars)
			if got := PromptOpensReasoning(prompt); got != tt.want {
				t.Fatalf("PromptOpensReasoning(%q) = %v", prompt, got)
			}
			// The same prompt with the think block forced open (as
			// DeepSeek-R1 and Qwen3 thinking templates end) opens it.
			if !PromptOpensReasoning(prompt + "<think>\n") {
				t.Fatalf("forced-open prompt not detected")
			}
		})
	}

	// The Qwen3 template writes the last assistant turn's reasoning as
	// "<think>\n" + reasoning + "\n</think>\n\n" + content.
	hist := []map[string]any{
		{"role": "user", "content": "Hi"},
		{"role": "assistant", "content": "Hello!", "reasoning_content": "A greeting."},
	}
	out := render("qwen3", map[string]any{"messages": hist, "add_generation_prompt": false})
	const start = "<|im_start|>assistant\n"
	i := len(out) - len("<|im_end|>\n")
	j := strings.LastIndex(out, start) + len(start)
	r := Split(out[j:i])
	if r.Reasoning != "\nA greeting.\n" || r.Content != "\n\nHello!" || !r.HasReasoning {
		t.Fatalf("split of %q = %+v", out[j:i], r)
	}
}
