package templates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRender: any template with any messages terminates within the
// sandbox's bounds — it loads or is refused, renders or fails to, with a
// typed error, never a panic, and stops in time.
func FuzzRender(f *testing.F) {
	for _, src := range dialectTemplates {
		f.Add(src, `[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`)
	}
	f.Add(`{% for m in messages %}{{ (m.role if m.content else 'x') ~ m.content | tojson }}{% endfor %}`, `[{"role":"user","content":{"a":[1,2]}}]`)
	f.Add(`{% macro f(n) %}{{ f(n) ~ f(n) }}{% endmacro %}{{ f(1) }}`, `[]`)
	f.Add(`{% for a in range(99) %}{% for b in range(99) %}{{ 'ab' * 99 }}{% endfor %}{% endfor %}`, `[]`)
	f.Add(`{{ ((((((1)))))) }}{% if (a if b else (c if d else e)) %}{% endif %}`, `null`)
	f.Add(`{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, `[]`)
	f.Add(`{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}{{ ns | tojson }}`, `[]`)
	limits := Limits{MaxOutputBytes: 1 << 16, MaxSteps: 50_000, MaxCallDepth: 16, MaxRange: 1000, Timeout: time.Second}
	f.Fuzz(func(t *testing.T, src, messages string) {
		tpl, err := load(src, WithLimits(limits))
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("parse error is not typed: %v", err)
			}
			return
		}
		var msgs []Message
		if json.Unmarshal([]byte(messages), &msgs) != nil {
			msgs = []Message{{Role: "user", Content: Text(messages)}}
		}
		start := time.Now()
		out, err := tpl.render(context.Background(), Input{Messages: msgs, Tools: sampleTools()[:1], AddGenerationPrompt: true})
		if d := time.Since(start); d > 10*limits.Timeout {
			t.Fatalf("render took %v, bound is %v", d, limits.Timeout)
		}
		if err != nil {
			var te *TemplateError
			var le *LimitError
			if !errors.As(err, &te) && !errors.As(err, &le) {
				t.Fatalf("render error is not typed: %T %v", err, err)
			}
			// A panic is contained by Render, but in Prism's own evaluator
			// it is a bug.
			if te != nil && strings.HasPrefix(te.Message, "the renderer failed") {
				t.Fatalf("evaluator panicked: %v", err)
			}
			return
		}
		if len(out) > limits.MaxOutputBytes {
			t.Fatalf("output of %d bytes passed the %d-byte cap", len(out), limits.MaxOutputBytes)
		}
	})
}

// FuzzLoad: any source is loaded, or refused with a *TemplateError;
// never a panic. A refused construct is named, with a line of the source
// as given on or before which its name is written (a tag the conditional
// rewrite changed is placed at its first line).
func FuzzLoad(f *testing.F) {
	for _, src := range dialectTemplates {
		f.Add(src)
	}
	for _, src := range []string{
		"{% for m in messages %}\n  {{ m.content | center(3) }}\n{% endfor %}",
		"{{ 'a' + (b if c else d) }}\n{%- if x -%}\n{{ y | wordwrap(3) }}{% endif %}",
		"{% if a %}\n{% include 'x' %}{% endif %}",
		"{% generation %}\n{{ x is escaped }}{% endgeneration %}",
		"{% raw %}{{ x }}{% endraw %}{{ ''.format() }}",
		"{% macro f(a, b=1) %}{{ a | urlize }}{% endmacro %}",
	} {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := loadTemplate(src, DefaultLimits())
		if err == nil {
			if tpl == nil {
				t.Fatal("no template and no error")
			}
			return
		}
		var te *TemplateError
		if !errors.As(err, &te) || te.Phase != "parse" {
			t.Fatalf("load error is not a parse *TemplateError: %T %v", err, err)
		}
		lines := strings.Count(src, "\n") + 1
		if te.Line < 0 || te.Line > lines {
			t.Fatalf("line %d outside the source's %d lines: %v", te.Line, lines, err)
		}
		if te.Line > 0 && !strings.Contains(err.Error(), fmt.Sprintf("line %d:", te.Line)) {
			t.Fatalf("the message does not give the line: %v", err)
		}
		if te.Construct == "" {
			return
		}
		if te.Line == 0 {
			t.Fatalf("refused %s without a line", te.Construct)
		}
		q := strings.IndexByte(te.Construct, '"')
		if q < 0 {
			return // a node kind, not a name written in the source
		}
		name, err := strconv.Unquote(te.Construct[q:])
		if err != nil {
			t.Fatalf("construct %s: %v", te.Construct, err)
		}
		start := 0
		for range te.Line - 1 {
			start += strings.IndexByte(src[start:], '\n') + 1
		}
		if !strings.Contains(src[start:], name) {
			t.Fatalf("refused %s at line %d, but %q is not written there or after:\n%s", te.Construct, te.Line, name, src)
		}
	})
}

// FuzzDecodeJSON: the order-keeping decoder accepts exactly the JSON
// encoding/json accepts (up to its nesting bound) and never panics.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,false,null]}`, `"\u00e9\ud83d\ude00"`, `-0.5e10`, `[]`, `{"a":{"a":{}}}`, `1e999`, `"\x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := decodeJSON(data, nil)
		valid := json.Valid(data)
		if err == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if err != nil && valid && !tooDeep(data) {
			t.Fatalf("rejected valid JSON %q: %v", data, err)
		}
	})
}

func tooDeep(data []byte) bool {
	depth, max := 0, 0
	for _, c := range data {
		switch c {
		case '[', '{':
			depth++
			if depth > max {
				max = depth
			}
		case ']', '}':
			depth--
		}
	}
	return max > maxJSONDepth
}
