package templates

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { verifyNoLeaks(m) }

// load loads one template with NewChat's options, for tests of the
// evaluator itself.
func load(src string, opts ...Option) (*template, error) {
	return loadTemplate(src, newOptions(opts).limits)
}

// TestSandboxBlocks checks each bound: the template is stopped with the
// typed error naming the bound, quickly, without exhausting memory.
func TestSandboxBlocks(t *testing.T) {
	small := Limits{MaxOutputBytes: 1 << 16, MaxSteps: 20_000, MaxCallDepth: 16, MaxRange: 1000, Timeout: 2 * time.Second}
	tests := []struct {
		name, src string
		limit     string // "" for a parse-time refusal
	}{
		{"include", `{% include 'other.jinja' %}`, ""},
		{"import", `{% import 'macros.jinja' as m %}`, ""},
		{"extends", `{% extends 'base.jinja' %}`, ""},
		{"from_import", `{% from 'x' import y %}`, ""},
		{"output_cap", `{% for i in range(1000) %}{{ 'x' * 1000 }}{% endfor %}`, "output"},
		{"nested_loops", `{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}`, "steps"},
		{"macro_recursion", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, "calls"},
		{"string_repeat", `{{ 'a' * 1000000000000 }}`, "size"},
		{"repeat_in_set", `{% set s = 'ab' * 100000000 %}{{ s }}`, "size"},
		{"doubling", `{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}`, "size"},
		{"huge_range", `{{ range(100000000) | length }}`, "range"},
		{"recursive_loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`, "calls"},
		{"quadratic_unique", `{{ range(1000) | unique | length }}`, "steps"},
		{"overflowing_range", `{{ range(-9223372036854775807, 9223372036854775807) | length }}`, "range"},
		{"replace_bomb", `{% set s = 'a' * 1000 %}{{ s | replace('a', s) }}`, "size"},
		{"join_bomb", `{% set s = 'a' * 60000 %}{{ [s, s, s, s, s, s, s, s, s, s] | join('') }}`, "size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, err := load(tt.src, WithLimits(small))
			if tt.limit == "" {
				var te *TemplateError
				if !errors.As(err, &te) || te.Phase != "parse" || te.Line != 1 || !strings.Contains(te.Message, "cannot load another") {
					t.Fatalf("want a load-time refusal of loading another template, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			start := time.Now()
			out, err := tpl.render(context.Background(), Input{})
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("want a *LimitError, got output of %d bytes, err %v", len(out), err)
			}
			if le.Limit != tt.limit {
				t.Fatalf("stopped by %q (%v), want %q", le.Limit, le, tt.limit)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %v to stop", d)
			}
		})
	}
}

func TestSourceBounds(t *testing.T) {
	deep := strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300)
	blocks := strings.Repeat("{% if true %}", 300) + strings.Repeat("{% endif %}", 300)
	for name, src := range map[string]string{
		"brackets": "{{ " + deep + " }}", "blocks": blocks, "size": strings.Repeat("x", 2<<20),
		"unclosed brackets": "{{ " + deep,
		// The parser's lexer loses its place after "0." before a
		// multi-byte character: it read "0" as a name, failed on a
		// slice bound, or (after a skipped byte) never ended.
		"number dot": "{{ 0.é }}", "number dot 3-byte": "{{ 0.ᥒ }}", "float dot": "{{ 1.5.é }}",
		"number dot after a skipped byte": "{{\xc50.ᥒ", "in a statement": "{% set x = §0.é %}",
		"unclosed in an escape": "{%\"\\",
	} {
		var te *TemplateError
		if _, err := load(src); !errors.As(err, &te) || te.Phase != "parse" {
			t.Errorf("%s: want a parse TemplateError, got %v", name, err)
		}
	}
	// Outside expressions, and in strings, such text is the template's own.
	for _, src := range []string{"1.请回答 {{ '2.é' }}", "{{ x }} 3.é", "{{ 0 .real }}"} {
		if _, err := load(src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

func TestRenderHonoursContext(t *testing.T) {
	tpl, err := load(`{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}`,
		WithLimits(Limits{MaxSteps: 1 << 40, MaxRange: 1 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = tpl.render(ctx, Input{})
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "deadline" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline LimitError wrapping DeadlineExceeded, got %v", err)
	}

	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := tpl.render(cancelled, Input{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: got %v", err)
	}
}

func TestRaiseIsTyped(t *testing.T) {
	tpl, err := load(`{% if messages[0].role != 'system' %}{{ raise_exception('System message required, got ' + messages[0].role) }}{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.render(context.Background(), Input{Messages: []Message{{Role: "user", Content: Text("x")}}})
	var te *TemplateError
	if !errors.As(err, &te) || !te.Raised || te.Message != "System message required, got user" {
		t.Fatalf("got %#v", err)
	}
}

func TestRenderRecoversPanics(t *testing.T) {
	// Integer modulo by zero would panic in Go; the render must fail
	// with an error instead.
	tpl, err := load(`{{ 1 % 0 }}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tpl.render(context.Background(), Input{}); err == nil {
		t.Fatal("want an error")
	}
}

func TestStrftimeNow(t *testing.T) {
	when := time.Date(2026, 7, 4, 9, 5, 3, 0, time.UTC)
	got := strftime(when, "%d %b %Y|%Y-%m-%d %H:%M:%S|%A %B %j %p %I|%%|%y")
	want := "04 Jul 2026|2026-07-04 09:05:03|Saturday July 185 AM 09|%|26"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	tpl, err := load(`{{ strftime_now('%Y') }}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tpl.render(context.Background(), Input{})
	if err != nil || len(out) != 4 {
		t.Fatalf("got %q %v", out, err)
	}
}

// TestPythonSemantics pins the places where the reference renderer departs
// from Jinja as transformers' Python renderer runs it; Prism follows Jinja.
func TestPythonSemantics(t *testing.T) {
	tests := []struct{ src, want string }{
		{`{{ 'xyx'.rstrip('x') }}|{{ '\n a \n'.strip('\n') }}|{{ '  a  '.lstrip() }}`, "xy| a |a  "},
		{`{{ ', '.join(['a', 'b']) }}`, "a, b"},
		{`{{ [1, 2, 3, 4][1::9223372036854775807] }}|{{ 'abcd'[::-9223372036854775807] }}|{{ [1, 2, 3, 4][::-2] }}|{{ 'abcdef'[1:5:2] }}`, "[2]|d|[4, 2]|bd"},
		{`{{ true }}|{{ 1 == 1 }}`, "True|True"},
		// Recursive loops: the reference does not parse them.
		{"{%- for node in [{'n': 'a', 'kids': [{'n': 'b', 'kids': []}, {'n': 'c', 'kids': [{'n': 'd', 'kids': []}]}]}] recursive -%}({{ node.n }}:{{ loop.depth }}{{ loop(node.kids) }}){%- endfor %}", "(a:1(b:2)(c:2(d:3)))"},
		// Not in the reference: loop.cycle and string repetition.
		{`{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %}|{{ 'ab' * 3 }}`, "aba|ababab"},
		{`{% for k, v in {'b': 1, 'A': 2, 'c': 0} | dictsort %}{{ k }}{{ v }}{% endfor %}|{% for k, v in {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) %}{{ k }}{% endfor %}`, "A2b1c0|ab"},
		{`{{ '[%s] %d items, %.2f%%' % ('x', 3, 1.5) }}|{{ 'hi %s' % none }}|{{ '%r' % 'a' }}`, "[x] 3 items, 1.50%|hi None|'a'"},
		// Python's modulo takes the divisor's sign (the reference gives -1).
		{`{{ -7 % 3 }}|{{ 7 % -3 }}|{{ -7.5 % 2 }}`, "2|-2|0.5"},
		{`{{ false is sameas false }}|{{ 0 is sameas false }}|{{ none is sameas none }}`, "True|False|True"},
		{`{{ none }}|{{ undefined_name }}|{{ none | default('d') }}|{{ undefined_name | default('d') }}`, "None||None|d"},
		{`{{ {'b': 1, 'a': 2} | tojson }}`, `{"b": 1, "a": 2}`},
		{`{{ [3, 1, 2] | max }}|{{ ['b', 'A', 'c'] | min }}|{{ ['b', 'A'] | min(case_sensitive=true) }}|{{ [{'n': 2}, {'n': 5}] | max(attribute='n') | attr('n') }}|{{ [] | max }}`, "3|A|A|5|"},
		{`{{ 'a-b-c'.partition('-')[2] }}|{{ 'a-b-c'.rpartition('-')[0] }}|{{ 'abc'.rpartition('x')[2] }}|{{ 'abc'.partition('x')[0] }}`, "b-c|a-b|abc|abc"},
		{`{{ 'ab1'.isalnum() }}|{{ 'a b'.isalnum() }}|{{ '²'.isdecimal() }}|{{ '²'.isnumeric() }}|{{ 'é'.isascii() }}|{{ 'aB'.swapcase() }}|{{ 'ABC'.casefold() }}|{{ 'abcabc'.rfind('b') }}`, "True|False|False|True|False|Ab|abc|4"},
		{`{% raw %}{{ not rendered }}{% endraw %}!{% raw %}{% endraw %}`, "{{ not rendered }}!"},
	}
	for _, tt := range tests {
		tpl, err := load(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		got, err := tpl.render(context.Background(), Input{})
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.src, got, err, tt.want)
		}
	}
}

func TestHoistConditionals(t *testing.T) {
	tests := []struct{ src, want string }{
		{`{{ 'x' + (a if b else c) }}`, `{% set _prism_cond_1 = a if b else c %}{{ 'x' + (_prism_cond_1) }}`},
		{`{{- f(a if b else c, d) }}`, `{%- set _prism_cond_1 = a if b else c %}{{- f(_prism_cond_1, d) }}`},
		{`{{ f(x, k=a if b else c) }}`, `{% set _prism_cond_1 = a if b else c %}{{ f(x, k=_prism_cond_1) }}`},
		{`{{ f(a == b if c else d) }}`, `{% set _prism_cond_1 = a == b if c else d %}{{ f(_prism_cond_1) }}`},
		{`{% set x = [(p if q else r), 2] %}`, `{% set _prism_cond_1 = p if q else r %}{% set x = [(_prism_cond_1), 2] %}`},
		{`{{ ((a if b else c) if d else e) }}`, `{% set _prism_cond_1 = a if b else c %}{% set _prism_cond_2 = (_prism_cond_1) if d else e %}{{ (_prism_cond_2) }}`},
		{`{{ a if b else c }}`, `{{ a if b else c }}`},
		{`{# (a if b else c) #}{{ "(x if y else z)" }}`, `{# (a if b else c) #}{{ "(x if y else z)" }}`},
		{`{% for m in ms if (m.a if m.b else m.c) %}{% endfor %}`, `{% for m in ms if (m.a if m.b else m.c) %}{% endfor %}`},
		{`{% elif (a if b else c) %}`, `{% elif (a if b else c) %}`},
	}
	for _, tt := range tests {
		got, _, _ := hoistConditionals(tt.src)
		if got != tt.want {
			t.Errorf("hoist %s\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

// TestFixtureTemplatesParse is the rewrite's proof on the corpus: every
// fixture template parses, and the rewrite changes only those that need
// it.
func TestFixtureTemplatesParse(t *testing.T) {
	for _, fam := range []string{"qwen3", "llama3_1", "gemma3", "deepseek_v3", "gptoss", "llama2"} {
		t.Run(fam, func(t *testing.T) {
			chat, err := ReadTokenizerConfig(tokenizerDir(t, fam))
			if err != nil {
				t.Fatal(err)
			}
			src, ok := chat.Named["default"]
			if !ok {
				t.Logf("%s ships no chat template; Chat.Render uses the built-in format", fam)
				return
			}
			pre, _ := preprocess(src)
			_, n, _ := hoistConditionals(pre)
			if _, err := load(src); err != nil {
				t.Fatalf("parse: %v", err)
			}
			t.Logf("%s: %d conditional(s) hoisted", fam, n)
		})
	}
}

func TestBoundsErrorsAreReadable(t *testing.T) {
	tpl, err := load(`{{ 'a' * 100000000000 }}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.render(context.Background(), Input{})
	if err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("got %v", err)
	}
}

// TestSandboxAttributes: a template reaches only the data it was given.
// Python's way out of a sandbox (dunder attributes, a class's
// subclasses) finds nothing: attributes exist only on mappings,
// namespaces and the loop, and a method the evaluator does not know is
// refused when the template is loaded.
func TestSandboxAttributes(t *testing.T) {
	for _, src := range []string{
		`{{ ''.__class__ }}{{ messages.__class__ }}{{ raise_exception.__globals__ }}{{ namespace.__init__ }}{{ loop }}{{ self }}`,
		`{{ messages[0].__dict__ }}{{ messages['__len__'] }}{{ range.__module__ }}`,
	} {
		tpl, err := load(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		out, err := tpl.render(t.Context(), Input{Messages: []Message{{Role: "user", Content: Text("x")}}})
		if err != nil || out != "" {
			t.Errorf("%s: got %q, %v; want nothing", src, out, err)
		}
	}
	for src, construct := range map[string]string{
		`{{ ''.__class__.__mro__[1].__subclasses__() }}`: `method "__subclasses__"`,
		`{{ messages.append(1) }}`:                       `method "append"`,
		`{{ 'x'.format() }}`:                             `method "format"`,
	} {
		_, err := load(src)
		var te *TemplateError
		if !errors.As(err, &te) || te.Construct != construct {
			t.Errorf("%s: want %s refused, got %v", src, construct, err)
		}
	}
}
