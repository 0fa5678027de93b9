package tools

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/prism-local/prism/internal/fixtures"
)

// tokenizerConfig reads a fixture family's chat template and added tokens.
func tokenizerConfig(t *testing.T, family string) (template string, added []string) {
	t.Helper()
	dir := fixtures.TokenizerDir(t, family)
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		Added        map[string]struct {
			Content string `json:"content"`
		} `json:"added_tokens_decoder"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.ChatTemplate) > 0 && cfg.ChatTemplate[0] == '"' {
		if err := json.Unmarshal(cfg.ChatTemplate, &template); err != nil {
			t.Fatal(err)
		}
	}
	for _, tok := range cfg.Added {
		added = append(added, tok.Content)
	}
	return template, added
}

func TestDetectFormatRealTemplates(t *testing.T) {
	tests := []struct {
		family string
		want   Format
	}{
		{"qwen3", FormatHermes},
		{"deepseek_v3", FormatDeepSeekV3},
		{"llama3_1", FormatLlama3},
		{"gptoss", FormatHarmony},
		{"gemma3", FormatNone},
		{"llama2", FormatNone},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			tmpl, added := tokenizerConfig(t, tt.family)
			got := DetectFormat(tmpl)
			if got == FormatNone {
				// The gpt-oss fixture ships no chat template; its
				// special tokens still name the format.
				got = DetectFormatFromTokens(added)
			}
			if got != tt.want {
				t.Fatalf("format %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDetectFormatMarkers(t *testing.T) {
	tests := []struct {
		src  string
		want Format
	}{
		{"{{- '[AVAILABLE_TOOLS] ' + tools|tojson + '[/AVAILABLE_TOOLS]' }}{{ '[TOOL_CALLS] ' }}", FormatMistral},
		{"{{ '<|start|>assistant<|channel|>final<|message|>' }}", FormatHarmony},
		{"{{- '<|python_tag|>' + tool_call.name + '.call(' }}", FormatLlama3},
		{"{{ bos_token }}[INST] {{ m.content }} [/INST]", FormatNone},
	}
	for _, tt := range tests {
		if got := DetectFormat(tt.src); got != tt.want {
			t.Errorf("DetectFormat(%q) = %s, want %s", tt.src, got, tt.want)
		}
	}
}

// TestRealTemplateToolCalls renders an assistant turn with two tool calls
// through the family's real chat template and checks that the parser reads
// the assistant text back as the same calls, whole and streamed.
func TestRealTemplateToolCalls(t *testing.T) {
	tests := []struct {
		family     string
		format     Format
		start, end string // around the assistant's own text in the render
		content    any
	}{
		{"qwen3", FormatHermes, "<|im_start|>assistant\n", "<|im_end|>", ""},
		{"deepseek_v3", FormatDeepSeekV3, "<｜Assistant｜>", "<｜end▁of▁sentence｜>", nil},
	}
	calls := []Call{
		{ID: "call_0", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "celsius"}`},
		{ID: "call_1", Name: "get_time", Arguments: `{"zone": "Europe/Paris"}`},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			src, _ := tokenizerConfig(t, tt.family)
			if got := DetectFormat(src); got != tt.format {
				t.Fatalf("DetectFormat = %s, want %s", got, tt.format)
			}
			tpl, err := gonja.FromString(src)
			if err != nil {
				t.Fatal(err)
			}
			var tc []any
			for _, c := range calls {
				tc = append(tc, map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
			}
			msgs := []map[string]any{
				{"role": "user", "content": "Weather and time in Paris?"},
				{"role": "assistant", "content": tt.content, "tool_calls": tc},
			}
			out, err := tpl.ExecuteToString(exec.NewContext(map[string]any{
				"messages": msgs, "bos_token": "", "eos_token": "", "add_generation_prompt": false,
			}))
			if err != nil {
				t.Fatal(err)
			}
			i := strings.LastIndex(out, tt.start)
			j := strings.LastIndex(out, tt.end)
			if i < 0 || j < i {
				t.Fatalf("cannot find the assistant turn in %q", out)
			}
			answer := out[i+len(tt.start) : j]
			got := Parse(tt.format, answer, WithIDs(seqIDs))
			if !reflect.DeepEqual(got.Calls, calls) || got.Content != "" || len(got.Warnings) != 0 {
				t.Fatalf("answer %q parsed to %+v", answer, got)
			}
			r := rand.New(rand.NewPCG(7, 8))
			for range 20 {
				if got := parseChunks(tt.format, randomChunks(r, answer)); !reflect.DeepEqual(got.Calls, calls) {
					t.Fatalf("streamed answer parsed to %+v", got)
				}
			}
		})
	}
}
