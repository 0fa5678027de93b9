//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/onnxgen"
)

// The speculation benchmarks' tasks, on random weights that copy nothing
// by themselves: the generator's script (a logit bias of 1000 on the
// script's next token at every position, which no random logit comes near)
// makes the model's greedy answer what the task needs, and its alternative
// script, chosen by a trigger in the prompt, gives the second task.
//
//   - rewrite: a 300-token prompt of distinct ids, answered by six runs of
//     40 of its tokens (a skip of 10 between runs), each run after one new
//     token: 246 tokens of which 240 (80 % of the prompt) are copied.
//   - free: another 300-token prompt holding the trigger, answered by 82
//     triples of a recurring pair of ids (three pairs in turn, like "of
//     the") and a new id: nothing to copy, and worse than nothing, as
//     each pair's last occurrence drafts the id that followed it there,
//     which is always rejected. Speculation must cost at most 3 % here.
const (
	specPromptLen = 300
	specRuns      = 6
	specRunLen    = 40
	specSkip      = 10
)

// specTrigger chooses the free-text answer.
var specTrigger = []int32{140001, 140002}

// specRewritePrompt is the rewrite task's prompt: distinct ids, so that no
// n-gram repeats inside it.
func specRewritePrompt() []int32 {
	p := make([]int32, specPromptLen)
	for i := range p {
		p[i] = int32(1000 + (i*7919)%50000)
	}
	return p
}

// specRewriteAnswer copies 80 % of the prompt with an edit before each run.
func specRewriteAnswer() []int32 {
	p := specRewritePrompt()
	var a []int32
	for r := range specRuns {
		a = append(a, int32(120000+r))
		a = append(a, p[r*(specRunLen+specSkip):r*(specRunLen+specSkip)+specRunLen]...)
	}
	return a
}

// specFreePrompt is the free-text task's prompt, with the trigger.
func specFreePrompt() []int32 {
	p := make([]int32, specPromptLen)
	for i := range p {
		p[i] = int32(60000 + (i*104729)%50000)
	}
	copy(p[150:], specTrigger)
	return p
}

// specFreeAnswer is pairs that recur with a new id after each.
func specFreeAnswer() []int32 {
	var a []int32
	for i := range len(specRewriteAnswer()) / 3 {
		p := int32(130001 + 2*(i%3))
		a = append(a, p, p+1, int32(125000+i*11))
	}
	return a
}

// specShape is a benchmark shape with the two scripts.
func specShape(name string) onnxgen.Config {
	c := benchShapes()[name]
	if len(c.EOS) == 0 {
		c.EOS = []int{151643}
	}
	c.Script = specRewriteAnswer()
	c.ScriptEOS = c.EOS[0]
	c.Alt = &onnxgen.AltScript{Trigger: specTrigger, Script: specFreeAnswer()}
	return c
}

// BenchmarkSpeculation runs each task plain and speculative on one loaded
// model, side by side; every run's tokens must be the script's greedy
// answer, so both modes give the same tokens. tokens/s is generated
// tokens after the first over the decode time; accept-% is the accepted
// share of the drafted tokens, tokens/step the tokens each runtime step
// of the decode yielded, and x-plain the speculative tokens/s over those
// of plain runs made beside the speculative ones.
func BenchmarkSpeculation(b *testing.B) {
	for _, shape := range []string{"tiny", "qwen05b", "qwen05b-int4"} {
		b.Run(shape, func(b *testing.B) {
			cfg := specShape(shape)
			dir := benchModel(b, shape+"-spec", cfg)
			be := openModel(b, dir, benchOptions())
			e, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			b.Logf("speculation %s: %s", e.Info().Speculation, e.Info().SpeculationReason)
			for _, task := range []struct {
				name   string
				prompt []int32
				answer []int32
			}{
				{"rewrite", specRewritePrompt(), specRewriteAnswer()},
				{"free", specFreePrompt(), specFreeAnswer()},
			} {
				want := append(slices.Clone(task.answer), int32(cfg.ScriptEOS))
				for _, mode := range []string{"plain", "speculative"} {
					b.Run(task.name+"/"+mode, func(b *testing.B) {
						var gen, plainGen time.Duration
						var tokens, steps, plainTokens int
						var st engine.SpeculationStats
						for i := range b.N {
							req := engine.Request{PromptIDs: task.prompt, MaxTokens: len(task.answer) + 1, NoSpeculation: mode == "plain"}
							if mode == "speculative" && i%2 == 1 {
								plainGen, plainTokens = plainGen+specPlain(b, e, req, want), plainTokens+len(want)-1
							}
							r := specRun(b, e, req)
							if !slices.Equal(r.ids, want) {
								b.Fatalf("%s %s: tokens are not the script's greedy answer:\n%v", task.name, mode, r.ids)
							}
							gen += r.res.Timings.Generation
							tokens += r.res.Usage.CompletionTokens - 1
							s := r.res.Speculation
							st.Steps, st.Drafted, st.Accepted = st.Steps+s.Steps, st.Drafted+s.Drafted, st.Accepted+s.Accepted
							steps += r.res.Usage.CompletionTokens - 1 - s.Accepted
							if mode == "speculative" && i%2 == 0 {
								plainGen, plainTokens = plainGen+specPlain(b, e, req, want), plainTokens+len(want)-1
							}
						}
						b.ReportMetric(float64(tokens)/gen.Seconds(), "tokens/s")
						b.ReportMetric(float64(tokens)/float64(steps), "tokens/step")
						if mode == "speculative" {
							b.ReportMetric(100*float64(st.Accepted)/max(1, float64(st.Drafted)), "accept-%")
							b.ReportMetric(float64(st.Steps)/float64(b.N), "verify-steps")
							// The same task plain, run beside each speculative
							// run (alternately after and before it), so that
							// load on a shared machine hits both alike.
							b.ReportMetric((float64(tokens)/gen.Seconds())/(float64(plainTokens)/plainGen.Seconds()), "x-plain")
						}
					})
				}
			}
		})
	}
}

// specPlain runs req without speculation, checks its tokens and returns
// its decode time.
func specPlain(b *testing.B, e *engine.Engine, req engine.Request, want []int32) time.Duration {
	b.Helper()
	req.NoSpeculation = true
	r := specRun(b, e, req)
	if !slices.Equal(r.ids, want) {
		b.Fatalf("plain: tokens are not the script's greedy answer:\n%v", r.ids)
	}
	return r.res.Timings.Generation
}

type specResult struct {
	ids []int32
	res engine.Result
}

func specRun(b *testing.B, e *engine.Engine, req engine.Request) specResult {
	b.Helper()
	s, err := e.Stream(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var r specResult
	for s.Next() {
		r.ids = append(r.ids, s.Token().ID)
	}
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	r.res = s.Result()
	return r
}

// BenchmarkVerifyStep is the cost of one runtime step of n tokens after
// 300 cached positions, every row's logits returned: n = 1 is a decode
// step, the others verify steps of a draft of n-1 tokens. It is what the
// draft length trades against.
func BenchmarkVerifyStep(b *testing.B) {
	for _, shape := range []string{"tiny", "qwen05b", "qwen05b-int4"} {
		b.Run(shape, func(b *testing.B) {
			be := openModel(b, benchModel(b, shape+"-spec", specShape(shape)), benchOptions())
			defer be.Close()
			prompt := specRewritePrompt()
			if err := be.Reserve(len(prompt) + 16); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := be.Forward(ctx, prompt, 0); err != nil {
				b.Fatal(err)
			}
			for _, n := range []int{1, 2, 3, 5, 9} {
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
					ids := prompt[:n]
					for range b.N {
						if _, err := be.Verify(ctx, ids, len(prompt)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
