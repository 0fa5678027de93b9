package templates

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// benchInput is the benchmark conversation: 20 messages (system, user and
// assistant turns, two tool-call round trips) and 5 tools.
func benchInput() Input {
	msgs := []Message{{Role: "system", Content: Text("You are a helpful assistant with tools.")}}
	for i := 0; len(msgs) < 20; i++ {
		switch i % 3 {
		case 0:
			msgs = append(msgs, Message{Role: "user", Content: Text(fmt.Sprintf("Question %d: what is the weather in city number %d, and should I bring an umbrella?", i, i))})
		case 1:
			msgs = append(msgs,
				Message{Role: "assistant", Content: Text(""), ToolCalls: []ToolCall{{ID: fmt.Sprint("call_", i), Type: "function",
					Function: FunctionCall{Name: "get_weather", Arguments: json.RawMessage(fmt.Sprintf(`{"location":"City %d","unit":"celsius"}`, i))}}}},
				Message{Role: "tool", ToolCallID: fmt.Sprint("call_", i), Content: Text(`{"temperature": 18, "rain": true}`)})
		case 2:
			msgs = append(msgs, Message{Role: "assistant", Content: Text("It is 18 °C with rain expected, so yes: take an umbrella. Anything else?")})
		}
	}
	return Input{Messages: msgs[:20], Tools: sampleTools(), AddGenerationPrompt: true}
}

// BenchmarkRenderQwen3 renders Qwen3's chat template with 20 messages and
// 5 tools, parsed once as a server does. Compare with
// BenchmarkReferenceQwen3, which times @huggingface/jinja on the same
// input under node.
func BenchmarkRenderQwen3(b *testing.B) {
	src, bos, eos := familyTemplate(b, "qwen3")
	tpl, err := load(src)
	if err != nil {
		b.Fatal(err)
	}
	in := benchInput()
	in.BOSToken, in.EOSToken = bos, eos
	ctx := context.Background()
	out, err := tpl.render(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.render(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReferenceQwen3 runs testdata/reference/render.mjs in bench
// mode on the same template and input, and reports the reference's time
// per render as the metric ref-ns/render (its own ns/op is meaningless).
func BenchmarkReferenceQwen3(b *testing.B) {
	src, bos, eos := familyTemplate(b, "qwen3")
	in := benchInput()
	in.BOSToken, in.EOSToken = bos, eos
	for b.Loop() {
		out := runReference(b, "bench", []vector{{Name: "qwen3/bench", Template: src, Input: in}}, "5000")
		var res struct {
			NsPerRender float64 `json:"ns_per_render"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.NsPerRender, "ref-ns/render")
	}
}
