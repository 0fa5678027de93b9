package templates

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

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
	tpl, err := load(`{{ extra | tojson }}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tpl.render(context.Background(), Input{Extra: map[string]any{"extra": raw(`{"z": 1, "a": [1.0, 2.5, -0, "x\u00e9"], "m": {}, "z": 3}`)}})
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
	tpl, err := load(src)
	if err != nil {
		t.Fatal(err)
	}
	in := benchInput()
	in.BOSToken, in.EOSToken = bos, eos
	want, err := tpl.render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 4
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for range 5 {
				got, err := tpl.render(context.Background(), in)
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
	tpl, err := load(`{{ a }}|{{ b + 1 }}|{{ c | tojson }}|{{ d | tojson }}|{% if e %}on{% endif %}|{{ f | tojson }}`)
	if err != nil {
		t.Fatal(err)
	}
	type opts struct {
		Zeta  int    `json:"zeta"`
		Alpha string `json:"alpha"`
	}
	out, err := tpl.render(context.Background(), Input{Extra: map[string]any{
		"a": "x", "b": int64(41), "c": []string{"p", "q"}, "d": opts{1, "z"}, "e": true,
		"f": map[string]any{"y": 1.5, "b": nil},
	}})
	want := `x|42|["p", "q"]|{"zeta": 1, "alpha": "z"}|on|{"b": null, "y": 1.5}`
	if err != nil || out != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
}
