//go:build cgo

package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// The gpt-oss tokenizer fixture ships no chat template, so the harmony
// models get this small one in harmony's framing; the "plain" model's
// template writes no tool-call markers at all (no known format).
const (
	harmonyTemplate = `{%- for m in messages -%}
{%- if m.role == "assistant" -%}<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>
{%- else -%}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}`
	plainTemplate = `{%- for m in messages -%}{{ m.role }}: {{ m.content }}
{% endfor -%}{%- if add_generation_prompt -%}assistant:{%- endif -%}`
)

// withTemplate copies a fixture tokenizer folder and adds a chat template.
func withTemplate(t *testing.T, family, template string) string {
	t.Helper()
	src := fixtures.TokenizerDir(t, family)
	dir := filepath.Join(t.TempDir(), family)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// scriptedModel is a random-weight model that writes script (special
// tokens by their text) and ends it on the first of eos (none: the
// tokenizer's eos_token), which are all its EOS ids.
type scriptedModel struct {
	name, tokDir, script string
	eos                  []string
}

// writeScripted writes each model into a folder of its name under a new
// root, which it returns.
func writeScripted(t *testing.T, models []scriptedModel) string {
	t.Helper()
	root := t.TempDir()
	writeScriptedTo(t, root, models)
	return root
}

// writeScriptedTo writes models into the folder root.
func writeScriptedTo(t *testing.T, root string, models []scriptedModel) {
	t.Helper()
	for _, m := range models {
		tok, err := tokenizer.Load(m.tokDir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := onnxgen.Tiny()
		cfg.Context, cfg.TokenizerDir, cfg.Vocab = 512, m.tokDir, 0
		cfg.Script, cfg.ScriptEOS = tok.EncodeWithSpecial(m.script), int(tok.EOS()[0])
		for i, s := range m.eos {
			id, ok := tok.TokenToID(s)
			if !ok {
				t.Fatalf("no token %q", s)
			}
			if i == 0 {
				cfg.ScriptEOS = int(id)
			}
			cfg.EOS = append(cfg.EOS, int(id))
		}
		if err := onnxgen.Write(context.Background(), filepath.Join(root, m.name), cfg); err != nil {
			t.Fatal(err)
		}
	}
}

// raceModels is models, or under the race detector the ones named in keep:
// the ones the tests' short runs use (writing a model over a 200,000-token
// vocabulary is most of a test's time under -race).
func raceModels(models []scriptedModel, keep ...string) []scriptedModel {
	if !raceEnabled {
		return models
	}
	var out []scriptedModel
	for _, m := range models {
		if slices.Contains(keep, m.name) {
			out = append(out, m)
		}
	}
	return out
}

// sharedFolder is a folder of models written by the first test that asks
// for it and kept for the others; TestMain removes it.
type sharedFolder struct {
	mu      sync.Mutex
	root    string
	written bool
}

// path returns the folder, written with write on first use. A write that
// failed fails this test and leaves the folder to be written again.
func (f *sharedFolder) path(t *testing.T, write func(t *testing.T, root string)) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.written {
		return f.root
	}
	if f.root == "" {
		dir, err := os.MkdirTemp("", "prism-server-models-")
		if err != nil {
			t.Fatal(err)
		}
		f.root = dir
	}
	write(t, f.root)
	f.written = !t.Failed()
	return f.root
}

// remove deletes the folder.
func (f *sharedFolder) remove() {
	if f.root != "" {
		_ = os.RemoveAll(f.root)
	}
}

// callFormatServer serves scripted models in the DeepSeek-V3 format (the
// fixture's own template) and in harmony, each a "tool" model that calls
// get_weather for Paris and a "json" model that writes a weather value,
// and a "plain" model whose template has no tool-call format.
func callFormatServer(t *testing.T) *testServer {
	t.Helper()
	ds := fixtures.TokenizerDir(t, "deepseek_v3")
	hm := withTemplate(t, "gptoss", harmonyTemplate)
	plain := withTemplate(t, "llama2", plainTemplate)
	const args = `{"city": "Paris", "unit": "celsius"}`
	models := []scriptedModel{
		{"ds-tool", ds, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" + args +
			"\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", nil},
		{"ds-json", ds, jsonAnswer, nil},
		// gpt-oss stops on <|call|> as on <|return|> (its generation config).
		{"hm-tool", hm, "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + args, []string{"<|call|>", "<|return|>"}},
		{"hm-json", hm, "<|channel|>final<|message|>" + jsonAnswer, []string{"<|return|>", "<|call|>"}},
		{"plain", plain, jsonAnswer, nil},
	}
	root := writeScripted(t, raceModels(models, "ds-tool", "ds-json", "plain"))
	cat, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	return start(t, nil, func(c *server.Config) { c.Catalog = cat })
}

// TestCallFormatsConstrained: DeepSeek-V3 and harmony tool calls are
// constrained by the tools' schemas like the other formats — required,
// named and auto, the model's own call (Paris) breaking the strict enum —
// and response_format together with tools is served: the answer is a
// call, or the value under the format. A model without a known tool-call
// format still gets the 400 for that combination.
func TestCallFormatsConstrained(t *testing.T) {
	ts := callFormatServer(t)
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"city", "temperature"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "temperature": map[string]any{"type": "integer"}}}
	format := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema, Strict: openai.Bool(true)}}}
	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	named := openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
	for _, prefix := range raceShort([]string{"ds", "hm"}) {
		t.Run(prefix, func(t *testing.T) {
			for _, c := range []struct {
				name   string
				choice *openai.ChatCompletionToolChoiceOptionUnionParam
				format bool
			}{{"required", &required, false}, {"named", &named, false}, {"auto", nil, false}, {"auto with response_format", nil, true}} {
				t.Run(c.name, func(t *testing.T) {
					params := hello(prefix + "-tool")
					params.Tools = cityTool(true)
					params.ParallelToolCalls = openai.Bool(false)
					params.MaxCompletionTokens = openai.Int(120)
					if c.choice != nil {
						params.ToolChoice = *c.choice
					}
					if c.format {
						params.ResponseFormat = format
					}
					resp, err := ts.client.Chat.Completions.New(t.Context(), params)
					if err != nil {
						t.Fatal(err)
					}
					checkCityCalls(t, resp, 1)
				})
			}
			t.Run("value with tools", func(t *testing.T) {
				params := hello(prefix + "-json")
				params.Tools, params.ResponseFormat = cityTool(true), format
				resp, err := ts.client.Chat.Completions.New(t.Context(), params)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					City        string `json:"city"`
					Temperature int    `json:"temperature"`
				}
				dec := json.NewDecoder(strings.NewReader(resp.Choices[0].Message.Content))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&got); err != nil || got.City != "Paris" || len(resp.Choices[0].Message.ToolCalls) != 0 {
					t.Fatalf("answer %s (%v)", resp.RawJSON(), err)
				}
			})
		})
	}
	t.Run("no known format", func(t *testing.T) {
		body := `{"model":"plain","messages":[{"role":"user","content":"hi"}],"max_tokens":20,` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],` +
			`"response_format":{"type":"json_object"}}`
		resp, out := post(t, ts, body, http.Header{})
		if code, param := errorOf(out); resp.StatusCode != 400 || code != "unsupported_parameter" || param != "response_format" {
			t.Errorf("status %d, error %v", resp.StatusCode, out)
		}
	})
}
