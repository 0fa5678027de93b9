package grammar_test

import (
	"slices"
	"testing"
	"time"

	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/tools"
)

// markedAnswers are answers under "auto" in the two token-marker
// syntaxes: free reasoning, then two calls.
var markedAnswers = map[tools.Format]string{
	tools.FormatDeepSeekV3: "<think>\nThe user wants the weather and a search.\n</think>\n\n" +
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" +
		`{"location": "Bogotá, Colombia", "units": "celsius"}` + "\n```<｜tool▁call▁end｜>\n" +
		"<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n" + `{"query": "rain tomorrow", "max_results": 5}` +
		"\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
	tools.FormatHarmony: "<|channel|>analysis<|message|>The user wants the weather and a search.<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" +
		`{"location": "Bogotá, Colombia", "units": "celsius"}` + "<|call|><|start|>assistant<|channel|>commentary to=functions.search " +
		`<|constrain|>json<|message|>{"query": "rain tomorrow", "max_results": 5}<|call|>`,
}

// BenchmarkMaskMarkedCalls measures one mask of an "auto" tool-call
// grammar in the DeepSeek-V3 and harmony syntaxes over their real
// vocabularies, stepping through markedAnswers token by token: cold
// compiles a fresh grammar per pass (first step not timed), warm reuses
// one. It reports the median and 99th percentile of the thread's CPU time
// per step.
func BenchmarkMaskMarkedCalls(b *testing.B) {
	ts, _ := offered(b)
	for _, cf := range markedFamilies {
		tok, v := family(b, cf.family)
		sx := syntaxOf(b, cf.format)
		ids := tok.EncodeWithSpecial(markedAnswers[cf.format])
		mask := make([]uint64, (v.Size()+63)/64)
		for _, mode := range []string{"cold", "warm"} {
			b.Run(cf.format.String()+"/"+mode, func(b *testing.B) {
				cpu := threadCPU()
				var g *grammar.Grammar
				var steps []time.Duration
				for b.Loop() {
					if g == nil || mode == "cold" {
						var err error
						if g, err = grammar.CompileToolCalls(v, ts, grammar.CallOptions{Syntax: sx, Parallel: true, Lazy: true}); err != nil {
							b.Fatal(err)
						}
					}
					m := g.Start()
					for k, id := range ids {
						c0 := cpu()
						clear(mask)
						m.Mask(mask)
						if k > 0 {
							steps = append(steps, cpu()-c0)
						}
						if !m.Advance(id) {
							b.Fatalf("token %d (%d) refused", k, id)
						}
					}
					if !m.CanEnd() {
						b.Fatal("the answer cannot end")
					}
				}
				slices.Sort(steps)
				at := func(p float64) float64 {
					return float64(steps[min(int(p*float64(len(steps))), len(steps)-1)].Nanoseconds()) / 1e3
				}
				b.ReportMetric(at(0.5), "cpu-p50-us")
				b.ReportMetric(at(0.99), "cpu-p99-us")
			})
		}
	}
}
