package templates

import (
	"encoding/json"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

// parityFamilies are the tokenizer fixtures whose chat templates must
// render byte-identically to the reference.
var parityFamilies = []string{"qwen3", "llama3_1", "gemma3", "deepseek_v3"}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func strPtr(s string) *string { return &s }

// sampleTools are five tool definitions whose keys are deliberately not in
// alphabetical order, with non-ASCII text, so key order and escaping show.
func sampleTools() []json.RawMessage {
	return []json.RawMessage{
		raw(`{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a city — in °C or °F","parameters":{"type":"object","properties":{"location":{"type":"string","description":"City, e.g. Zürich"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}}}`),
		raw(`{"type":"function","function":{"name":"search_web","description":"Search the web and return the top results","parameters":{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"integer","minimum":1,"maximum":10,"default":5}},"required":["query"]}}}`),
		raw(`{"type":"function","function":{"name":"send_email","description":"Send an e-mail \"as is\" to one recipient","parameters":{"type":"object","properties":{"to":{"type":"string","format":"email"},"subject":{"type":"string"},"body":{"type":"string"},"cc":{"type":"array","items":{"type":"string"}}},"required":["to","subject","body"]}}}`),
		raw(`{"type":"function","function":{"name":"calculator","description":"Evaluate an arithmetic expression","parameters":{"type":"object","properties":{"expression":{"type":"string"},"precision":{"type":"number","default":0.01}},"required":["expression"]}}}`),
		raw(`{"type":"function","function":{"name":"read_file","description":"Read a text file (UTF-8) — paths are relative","parameters":{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]}}}`),
	}
}

// messageSets are the conversations every family template renders.
func messageSets(family string) map[string]Input {
	// DeepSeek-V3's template concatenates arguments as a string; Qwen3's
	// prints a string as is and a mapping through tojson. Both forms are
	// exercised where the template accepts them.
	args := raw(`{"location":"Zürich","unit":"celsius"}`)
	if family == "deepseek_v3" || family == "llama3_1" {
		args = raw(`"{\"location\": \"Zürich\", \"unit\": \"celsius\"}"`)
	}
	toolTurn := []Message{
		{Role: "system", Content: Text("You are a helpful assistant.")},
		{Role: "user", Content: Text("What's the weather in Zürich?")},
		{Role: "assistant", Content: Null(), ToolCalls: []ToolCall{{ID: "call_1", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: args}}}},
		{Role: "tool", ToolCallID: "call_1", Name: "get_weather", Content: Text(`{"temperature": 21, "condition": "sunny"}`)},
		{Role: "assistant", Content: Text("It is 21 °C and sunny in Zürich.")},
		{Role: "user", Content: Text("Thanks! And tomorrow?")},
	}
	if family == "qwen3" {
		toolTurn[2].Content = Text("")
	}
	return map[string]Input{
		"single_turn": {
			Messages:            []Message{{Role: "user", Content: Text("Hello! How are you?")}},
			AddGenerationPrompt: true,
		},
		"system_multi_turn": {
			Messages: []Message{
				{Role: "system", Content: Text("You are a concise assistant.")},
				{Role: "user", Content: Text("Name a prime number.")},
				{Role: "assistant", Content: Text("7")},
				{Role: "user", Content: Text("  Another one, please.  ")},
				{Role: "assistant", Content: Text("11")},
				{Role: "user", Content: Text("And the sum?")},
			},
			AddGenerationPrompt: true,
		},
		"no_generation_prompt": {
			Messages: []Message{
				{Role: "user", Content: Text("Hi")},
				{Role: "assistant", Content: Text("Hello.")},
			},
		},
		"tools_offered": {
			Messages: []Message{
				{Role: "system", Content: Text("You can call tools.")},
				{Role: "user", Content: Text("What's the weather in Zürich?")},
			},
			Tools:               sampleTools(),
			AddGenerationPrompt: true,
		},
		"tool_round_trip": {
			Messages:            toolTurn,
			Tools:               sampleTools()[:2],
			AddGenerationPrompt: true,
		},
		"unicode": {
			Messages: []Message{
				{Role: "system", Content: Text("Réponds en français, s'il te plaît. 🙂")},
				{Role: "user", Content: Text("Ça va? 日本語で「こんにちは」は？ \"quotes\" \\ backslash\ttab")},
				{Role: "assistant", Content: Text("Très bien — こんにちは 👋")},
				{Role: "user", Content: Text("Merci ✓")},
			},
			AddGenerationPrompt: true,
		},
		"content_parts": {
			Messages: []Message{
				{Role: "user", Content: TextParts("Describe ", "this.")},
			},
			AddGenerationPrompt: true,
		},
		"role_alternation_broken": {
			Messages: []Message{
				{Role: "user", Content: Text("one")},
				{Role: "user", Content: Text("two")},
			},
			AddGenerationPrompt: true,
		},
	}
}

// familyExtras are the per-family variations on top of messageSets.
func familyExtras(family string) map[string]Input {
	switch family {
	case "qwen3":
		return map[string]Input{
			"thinking_off": {
				Messages:            []Message{{Role: "user", Content: Text("2+2?")}},
				AddGenerationPrompt: true,
				Extra:               map[string]any{"enable_thinking": raw("false")},
			},
			"reasoning_content": {
				Messages: []Message{
					{Role: "user", Content: Text("2+2?")},
					{Role: "assistant", Content: Text("4"), ReasoningContent: strPtr("\nSimple sum.\n")},
					{Role: "user", Content: Text("3+3?")},
					{Role: "assistant", Content: Text("<think>\nadd\n</think>\n\n6")},
				},
			},
			"parallel_calls": {
				Messages: []Message{
					{Role: "user", Content: Text("Weather in Paris and Rome?")},
					{Role: "assistant", Content: Text("Checking both."), ToolCalls: []ToolCall{
						{ID: "a", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: raw(`{"unit":"celsius","location":"Paris"}`)}},
						{ID: "b", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: raw(`"{\"location\":\"Rome\"}"`)}},
					}},
					{Role: "tool", ToolCallID: "a", Content: Text("18")},
					{Role: "tool", ToolCallID: "b", Content: Text("24")},
				},
				Tools:               sampleTools()[:1],
				AddGenerationPrompt: true,
			},
		}
	}
	return nil
}

// dialectTemplates exercise the dialect features one by one, each against
// the reference too.
var dialectTemplates = map[string]string{
	"paren_conditional":    `{{ 'a' + (messages[0].role if messages else 'none') + 'b' }}|{{ [1 if add_generation_prompt else 2, 3] | tojson }}|{{ ('x' if false else ('y' if true else 'z')) }}`,
	"conditional_in_call":  `{% for m in messages if m.content is not none %}{{ m.content | default('-' if m.role == 'user' else '+') }}{% endfor %}`,
	"conditional_indented": "<\n    {{ (messages[0].role if true else '') }}\n  {% if true %}\n    {{- ('x' if loop is defined else 'y') }}\n  {% endif %}\n>",
	"tojson_forms":         `{{ tools[0] | tojson }}|{{ tools[0].function.parameters | tojson(indent=2) }}|{{ tools[0].function.description | tojson(ensure_ascii=true) }}|{{ {'b': 1, 'a': [true, none, 1.5, "\u00e9"]} | tojson }}`,
	"items_order":          `{% for k, v in tools[0].function.parameters.properties.items() %}{{ k }}={{ v.type }};{% endfor %}{% for k in tools[0].function.keys() %}{{ k }},{% endfor %}{{ tools[0].function.get('name') }}{{ tools[0].function.get('nope', 'dflt') }}`,
	"namespace_loop":       `{% set ns = namespace(n=0, last='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.last = m.role %}{{ loop.index }}/{{ loop.length }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %} {% endfor %}{{ ns.n }} {{ ns.last }}`,
	"slicing_methods":      `{{ messages[::-1] | map(attribute='role') | join(',') }}|{{ messages[1:] | length }}|{{ messages[-1].role }}|{{ 'Hello World'.lower().split(' ') | join('-') }}|{{ '  pad  '.strip() }}|{% if 'a\nb'.startswith('a') %}S{% endif %}|{{ ' xyx  '.rstrip() }}|{{ 'abc'.upper() }}|{{ 'hello world'.title() }}|{{ 'a,b'.replace(',', ';') }}|{% if 'abc'.endswith('c') %}E{% endif %}`,
	"tests":                `{% for m in messages %}{% if m.content is string %}s{% endif %}{% if m.content is mapping %}m{% endif %}{% if m.tool_calls is defined %}d{% endif %}{% if m.content is none %}n{% endif %}{% if m is mapping %}M{% endif %}{% if m.content is iterable %}i{% endif %};{% endfor %}{% if tools is none %}N{% endif %}{% if tools is not none %}T{% endif %}`,
	"raise":                `{% if messages | length > 1 %}{{ raise_exception('Only one message, please: ' ~ messages | length) }}{% endif %}ok`,
	"whitespace_control":   "{% for m in messages %}\n  {{ m.role }}\n  {%- if true %} yes {% endif -%}\n{% endfor %}\n  {# comment #}\nend\n",
	"extra_variables":      `{% if enable_thinking %}on{% endif %}|{% if custom_list %}{{ custom_list | length }}{% endif %}|{{ date_string | default('none') }}`,
	"tool_listing": "{%- set sys = messages | selectattr('role', 'equalto', 'system') | list %}{%- set rest = messages | rejectattr('role', 'equalto', 'system') | list %}" +
		"{{- sys | length }}/{{ rest | length }}\n{%- for t in tools %}{%- set f = t.function if t.function is defined else t %}" +
		"{{- f.name }}({%- for name, spec in f.parameters.properties | items %}{{ name }}: {{ spec.type }}{% if name in f.parameters.required %}!{% endif %}{{ ', ' if not loop.last }}{%- endfor %})\n" +
		"{{- f | tojson(indent=4) }}\n{%- endfor %}{%- for m in messages if m.tool_calls %}{%- for c in m.tool_calls %}{{ c.function.name }}{{ c.function.arguments | tojson }}" +
		"{%- for k, v in c.function.arguments | items %}[{{ k }}={{ v }}]{%- endfor %}{%- endfor %}{%- endfor %}",
	"macros":                `{% macro tag(name, body='-', close=true) %}<{{ name }}>{{ body }}{% if close %}</{{ name }}>{% endif %}{% endmacro %}{{ tag('a') }}{{ tag('b', 'x') }}{{ tag('c', close=false) }}{% for m in messages %}{{ tag(m.role, body=m.content | trim if m.content is string else '') }}{% endfor %}`,
	"call_block":            `{% macro box(title) %}[{{ title }}:{{ caller() }}]{% endmacro %}{% call box('t') %}inner {{ messages | length }}{% endcall %}`,
	"loop_extras":           `{% for m in messages %}{{ loop.index }}:{{ loop.revindex }}:{% if loop.previtem is defined %}{{ loop.previtem.role }}{% endif %}>{% if loop.nextitem is defined %}{{ loop.nextitem.role }}{% endif %};{% endfor %}{% for x in [] %}never{% else %}empty{% endfor %}`,
	"break_continue":        `{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}`,
	"defined_vs_none":       `{% for m in messages %}{% if m.reasoning_content is defined %}D{% endif %}{% if m.reasoning_content is none %}N{% endif %}{% if m.nope is defined %}X{% endif %}{% if m.content is none %}C{% endif %};{% endfor %}`,
	"arithmetic":            `{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 10 - 4 - 3 }} {{ ([1, 2] + [3]) | length }}`,
	"in_operator":           `{% if 'hi' in messages[0].content %}1{% endif %}{% if 'x' not in 'abc' %}2{% endif %}{% if 'role' in messages[0] %}3{% endif %}{% if 3 in [1, 2, 3] %}4{% endif %}`,
	"string_concat_filters": `{{ messages | length }}{{ (messages | first).role | upper }}{{ messages[0].content | trim | length }}{{ ['a', 'b'] | join(', ') }}`,
}

// referenceCases builds every case: the family templates on every message
// set, and the dialect templates on a small conversation.
func referenceCases(t testing.TB) []vector {
	t.Helper()
	var cases []vector
	for _, fam := range parityFamilies {
		src, bos, eos := familyTemplate(t, fam)
		sets := messageSets(fam)
		for name, in := range familyExtras(fam) {
			sets[name] = in
		}
		for _, name := range sortedKeys(sets) {
			in := sets[name]
			in.BOSToken, in.EOSToken = bos, eos
			cases = append(cases, vector{Name: fam + "/" + name, Family: fam, Template: src, Input: in})
		}
	}
	small := Input{
		Messages: []Message{
			{Role: "user", Content: Text("  hi there "), ReasoningContent: nil},
			{Role: "assistant", Content: Text("hello"), ToolCalls: []ToolCall{{ID: "x", Type: "function", Function: FunctionCall{Name: "f", Arguments: raw(`{"z":1,"a":2}`)}}}},
			{Role: "user", Content: Text("bye")},
			{Role: "assistant", Content: Null(), ReasoningContent: strPtr("")},
		},
		Tools:               sampleTools()[:2],
		AddGenerationPrompt: true,
		Extra:               map[string]any{"enable_thinking": raw("true"), "custom_list": raw(`[1,2,3]`)},
	}
	for _, name := range sortedKeys(dialectTemplates) {
		cases = append(cases, vector{Name: "dialect/" + name, Template: dialectTemplates[name], Input: small})
	}
	return cases
}

// familyTemplate reads a family's chat template and special tokens from
// its real tokenizer folder.
func familyTemplate(t testing.TB, family string) (src, bos, eos string) {
	t.Helper()
	chat, err := ReadTokenizerConfig(tokenizerDir(t, family))
	if err != nil {
		t.Fatalf("%s: %v", family, err)
	}
	src, ok := chat.Named["default"]
	if !ok {
		t.Fatalf("%s has no default chat template", family)
	}
	return src, chat.BOSToken, chat.EOSToken
}

// tokenizerDir is the real tokenizer folder of family.
func tokenizerDir(t testing.TB, family string) string {
	t.Helper()
	return fixtures.TokenizerDir(t, family)
}
