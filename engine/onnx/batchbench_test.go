//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// batchBenchSizes are the batch sizes BenchmarkBatchDecode compares.
var batchBenchSizes = []int{1, 4, 8}

// BenchmarkBatchDecode measures the aggregate decode rate of B sequences
// (prompts of 16, 19, 22 … tokens) decoded greedily together with
// Admit/Decode, at B = 1, 4 and 8 side by side in every iteration, so
// load on the machine hits every size alike. Only the batched decode
// steps (and each row's argmax) are timed; the prefills and admissions
// are not. tokens/s-bN is the tokens of all N sequences per second,
// x-bN that rate over B = 1's; tokens/s-forward is one sequence decoded
// with Forward, the path without batching, in the same iterations.
func BenchmarkBatchDecode(b *testing.B) {
	for _, shape := range []string{"tiny", "qwen05b"} {
		b.Run(shape, func(b *testing.B) {
			opts := benchOptions()
			opts.MaxBatch = batchBenchSizes[len(batchBenchSizes)-1]
			be := openModel(b, benchModel(b, shape), opts)
			if be.batch == nil {
				b.Fatalf("batching off: %s", be.Info().BatchReason)
			}
			b.Logf("%s", be.Info().BatchReason)
			ctx := context.Background()
			took := make([]time.Duration, len(batchBenchSizes))
			var alone time.Duration
			run := func() {
				for i, n := range batchBenchSizes {
					took[i] += batchDecodeRun(b, ctx, be, n, benchNewTokens)
				}
				alone += forwardDecodeRun(b, ctx, be, benchNewTokens)
			}
			run() // warm up: the batch's buffers, first-use tensors
			clear(took)
			alone = 0
			b.ResetTimer()
			for range b.N {
				run()
			}
			base := 0.0
			for i, n := range batchBenchSizes {
				rate := float64(n*benchNewTokens*b.N) / took[i].Seconds()
				if i == 0 {
					base = rate
				}
				b.ReportMetric(rate, fmt.Sprintf("tokens/s-b%d", n))
				b.ReportMetric(rate/base, fmt.Sprintf("x-b%d", n))
			}
			b.ReportMetric(float64(benchNewTokens*b.N)/alone.Seconds(), "tokens/s-forward")
		})
	}
}

// batchDecodeRun prefills and admits n sequences, decodes steps tokens of
// each in batched steps, drops them, and returns the time of the steps.
func batchDecodeRun(b *testing.B, ctx context.Context, be *Backend, n, steps int) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	v := be.Info().VocabSize
	slots := make([]int, n)
	ids := make([]int32, n)
	for k := range n {
		logits, err := be.Forward(ctx, promptIDs(16+3*k), 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := be.Admit(k); err != nil {
			b.Fatal(err)
		}
		slots[k], ids[k] = k, argmaxOf(logits)
	}
	start := time.Now()
	for range steps {
		out, err := be.Decode(ctx, slots, ids)
		if err != nil {
			b.Fatal(err)
		}
		for k := range n {
			ids[k] = argmaxOf(out[k*v : (k+1)*v])
		}
	}
	d := time.Since(start)
	for k := range n {
		be.Drop(k)
	}
	return d
}

// forwardDecodeRun decodes steps tokens of one sequence with Forward and
// returns the time of the steps.
func forwardDecodeRun(b *testing.B, ctx context.Context, be *Backend, steps int) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	prompt := promptIDs(16)
	logits, err := be.Forward(ctx, prompt, 0)
	if err != nil {
		b.Fatal(err)
	}
	id := argmaxOf(logits)
	start := time.Now()
	for i := range steps {
		if logits, err = be.Forward(ctx, []int32{id}, len(prompt)+i); err != nil {
			b.Fatal(err)
		}
		id = argmaxOf(logits)
	}
	return time.Since(start)
}
