//go:build cgo

package onnx

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// Benchmark shapes: the tiny model (2 layers, 64 wide, the Qwen3
// vocabulary size) and the Qwen2.5-0.5B shape, fp32 and int4, all in the
// optimum layout transformers.js also runs. Folders are written once into
// the cache (PRISM_CACHE_DIR or ~/.cache/prism) under bench-models/.
func benchShapes() map[string]onnxgen.Config {
	tiny := onnxgen.Tiny()
	tiny.Vocab = 151669
	tiny.Context = 4096
	tiny.Tied = false
	tinyGQA := tiny
	tinyGQA.Layout, tinyGQA.Attention = onnxgen.LayoutGenAI, onnxgen.AttentionGQA
	q := onnxgen.Qwen25Half()
	q.Vocab = 151669
	q.Context = 4096
	q4 := q
	q4.Quant = onnxgen.QuantInt4
	// The position-based causal mask: the padded past fails its proof on
	// these, so they run on the exact hand-over.
	tinyPos, qPos := tiny, q
	tinyPos.Mask, qPos.Mask = onnxgen.MaskPositions, onnxgen.MaskPositions
	return map[string]onnxgen.Config{"tiny": tiny, "tiny-gqa": tinyGQA, "qwen05b": q, "qwen05b-int4": q4,
		"tiny-posmask": tinyPos, "qwen05b-posmask": qPos}
}

// BenchModel returns the folder of the named benchmark shape (or of the
// config given, under that name), writing it on first use.
func benchModel(b testing.TB, name string, cfgs ...onnxgen.Config) string {
	b.Helper()
	cfg, ok := benchShapes()[name]
	if len(cfgs) > 0 {
		cfg, ok = cfgs[0], true
	}
	if !ok {
		b.Fatalf("no benchmark shape %q", name)
	}
	root, err := fixtures.CacheRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, "bench-models", name)
	if !onnxgen.Complete(dir, cfg) {
		start := time.Now()
		if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %s in %s", dir, time.Since(start).Round(time.Millisecond))
	}
	return dir
}

// benchOptions are the engine options of every benchmark: PRISM_THREADS,
// and session config entries from PRISM_BENCH_ORT_CONFIG as key=value
// pairs separated by commas, for comparing the runtime's settings.
func benchOptions() Options {
	o := Options{Threads: benchThreads()}
	for _, kv := range strings.Split(os.Getenv("PRISM_BENCH_ORT_CONFIG"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if o.SessionConfig == nil {
				o.SessionConfig = map[string]string{}
			}
			o.SessionConfig[k] = v
		}
	}
	return o
}

func benchThreads() int {
	var n int
	fmt.Sscan(os.Getenv("PRISM_THREADS"), &n)
	return n
}

const benchNewTokens = 32

// promptIDs is a deterministic prompt of n ids below 256.
func promptIDs(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(1 + (i*37)%250)
	}
	return ids
}

// BenchmarkStream is Engine.Stream end to end: per-token time of greedy
// decoding after a 16-token prompt, and time to first token.
func BenchmarkStream(b *testing.B) {
	for _, shape := range []string{"tiny", "tiny-gqa", "tiny-posmask", "qwen05b", "qwen05b-posmask", "qwen05b-int4"} {
		b.Run(shape, func(b *testing.B) {
			be := openModel(b, benchModel(b, shape), benchOptions())
			e, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			req := engine.Request{PromptIDs: promptIDs(16), MaxTokens: benchNewTokens}
			run := func() engine.Result {
				s, err := e.Stream(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				for s.Next() {
				}
				if s.Err() != nil {
					b.Fatal(s.Err())
				}
				return s.Result()
			}
			run() // warm up: first-use mask views, logits buffers
			b.ReportAllocs()
			b.ResetTimer()
			var gen, ttft time.Duration
			var tokens int
			for range b.N {
				r := run()
				gen += r.Timings.Generation
				ttft += r.Timings.TimeToFirstToken
				tokens += r.Usage.CompletionTokens - 1
			}
			b.ReportMetric(float64(gen.Nanoseconds())/float64(tokens), "ns/token")
			b.ReportMetric(float64(tokens)/gen.Seconds(), "tokens/s")
			b.ReportMetric(float64(ttft.Microseconds())/float64(b.N)/1000, "ms-ttft")
		})
	}
}

// BenchmarkOverhead measures Engine.Stream's per-token cost against the
// shortest sensible greedy loop straight over onnxruntime_go on the same
// model (id, position and logits tensors reused; the mask and the present
// outputs, whose shapes change every step, made anew; the presents handed
// back as the next past; a value-by-value argmax on the logits, as a plain
// loop would scan them). Every iteration runs both
// in turn, each with only its own session alive — two sessions' thread
// pools spinning side by side on a small machine would slow whichever runs
// second — so load on the machine hits both alike. overhead-% is
// (engine - bare) / bare per generated token.
func BenchmarkOverhead(b *testing.B) {
	for _, shape := range []string{"tiny", "tiny-posmask", "qwen05b", "qwen05b-posmask", "qwen05b-int4"} {
		b.Run(shape, func(b *testing.B) {
			cfg := benchShapes()[shape]
			dir := benchModel(b, shape)
			bareRun := func() (time.Duration, int) {
				b.StopTimer()
				bare := newBareLoop(b, dir, cfg)
				defer bare.close()
				bare.generate(b, promptIDs(16), benchNewTokens) // warm-up
				b.StartTimer()
				return bare.generate(b, promptIDs(16), benchNewTokens)
			}
			first := true
			engineRun := func() (time.Duration, int) {
				b.StopTimer()
				be := openModel(b, dir, benchOptions())
				e, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)))
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				stream := func(first int32) (time.Duration, int) {
					p := promptIDs(16)
					p[0] = first // no prefix reuse between the runs
					s, err := e.Stream(context.Background(), engine.Request{PromptIDs: p, MaxTokens: benchNewTokens})
					if err != nil {
						b.Fatal(err)
					}
					for s.Next() {
					}
					r := s.Result()
					return r.Timings.Generation, r.Usage.CompletionTokens - 1
				}
				stream(2) // warm-up
				if first {
					b.Logf("kv_cache %s: %s", be.Info().KVCache, be.Info().KVCacheReason)
					first = false
				}
				b.StartTimer()
				return stream(1)
			}
			var bareT, engT time.Duration
			var bareN, engN int
			for range b.N {
				d, n := bareRun()
				bareT, bareN = bareT+d, bareN+n
				d, n = engineRun()
				engT, engN = engT+d, engN+n
			}
			bareTok := float64(bareT.Nanoseconds()) / float64(bareN)
			engTok := float64(engT.Nanoseconds()) / float64(engN)
			b.ReportMetric(bareTok, "bare-ns/token")
			b.ReportMetric(engTok, "engine-ns/token")
			b.ReportMetric(1e9/bareTok, "bare-tokens/s")
			b.ReportMetric(1e9/engTok, "engine-tokens/s")
			b.ReportMetric(100*(engTok-bareTok)/bareTok, "overhead-%")
		})
	}
}

type bareLoop struct {
	sess    *ort.DynamicAdvancedSession
	cfg     onnxgen.Config
	ins     []string
	outs    []string
	layers  int
	kvShape func(n int64) ort.Shape
	vocab   int64
}

func newBareLoop(b testing.TB, dir string, cfg onnxgen.Config) *bareLoop {
	b.Helper()
	if _, err := loadRuntime(fixtures.ORTLib(b)); err != nil {
		b.Fatal(err)
	}
	ins := []string{"input_ids", "attention_mask", "position_ids"}
	outs := []string{"logits"}
	for l := range cfg.Layers {
		ins = append(ins, onnxgen.PastKey(l), onnxgen.PastValue(l))
		outs = append(outs, onnxgen.PresentKey(l), onnxgen.PresentValue(l))
	}
	so, _ := ort.NewSessionOptions()
	defer so.Destroy()
	if n := benchThreads(); n > 0 {
		so.SetIntraOpNumThreads(n)
	}
	for k, v := range benchOptions().SessionConfig {
		if err := so.AddSessionConfigEntry(k, v); err != nil {
			b.Fatal(err)
		}
	}
	sess, err := ort.NewDynamicAdvancedSession(filepath.Join(dir, cfg.ModelFile()), ins, outs, so)
	if err != nil {
		b.Fatal(err)
	}
	kvh, hd := int64(cfg.KVHeads), int64(cfg.HeadSize())
	return &bareLoop{sess: sess, cfg: cfg, ins: ins, outs: outs, layers: cfg.Layers, vocab: int64(cfg.Vocab),
		kvShape: func(n int64) ort.Shape { return ort.NewShape(1, kvh, n, hd) }}
}

// generate prefills prompt and decodes n tokens greedily; it returns the
// decode time (first token excluded, as Engine's Timings.Generation) and
// the tokens it covers.
func (l *bareLoop) generate(b testing.TB, prompt []int32, n int) (time.Duration, int) {
	past := make([]ort.Value, 2*l.layers)
	for i := range past {
		t, err := ort.NewTensor(l.kvShape(0), []float32{})
		if err != nil {
			b.Fatal(err)
		}
		past[i] = t
	}
	defer func() {
		for _, v := range past {
			v.Destroy()
		}
	}()
	// Decode steps reuse their id, position and logits tensors; the mask
	// and the present outputs change shape every step and are made anew.
	one := []int64{0}
	onePos := []int64{0}
	idOne, _ := ort.NewTensor(ort.NewShape(1, 1), one)
	posOne, _ := ort.NewTensor(ort.NewShape(1, 1), onePos)
	logitsOne, _ := ort.NewEmptyTensor[float32](ort.NewShape(1, 1, l.vocab))
	defer idOne.Destroy()
	defer posOne.Destroy()
	defer logitsOne.Destroy()
	ones := make([]int64, len(prompt)+n)
	for i := range ones {
		ones[i] = 1
	}
	step := func(ids []int32, pos int) int32 {
		s := int64(len(ids))
		idT, posT, logitsT := idOne, posOne, logitsOne
		if s == 1 {
			one[0], onePos[0] = int64(ids[0]), int64(pos)
		} else {
			idData := make([]int64, s)
			posData := make([]int64, s)
			for i, id := range ids {
				idData[i], posData[i] = int64(id), int64(pos+i)
			}
			idT, _ = ort.NewTensor(ort.NewShape(1, s), idData)
			posT, _ = ort.NewTensor(ort.NewShape(1, s), posData)
			logitsT, _ = ort.NewEmptyTensor[float32](ort.NewShape(1, s, l.vocab))
			defer idT.Destroy()
			defer posT.Destroy()
			defer logitsT.Destroy()
		}
		maskT, _ := ort.NewTensor(ort.NewShape(1, int64(pos+len(ids))), ones)
		defer maskT.Destroy()
		inputs := append([]ort.Value{idT, maskT, posT}, past...)
		outputs := []ort.Value{logitsT}
		for range 2 * l.layers {
			t, _ := ort.NewEmptyTensor[float32](l.kvShape(int64(pos + len(ids))))
			outputs = append(outputs, t)
		}
		if err := l.sess.Run(inputs, outputs); err != nil {
			b.Fatal(err)
		}
		for i := range past {
			past[i].Destroy()
			past[i] = outputs[1+i]
		}
		return argmaxOf(logitsT.GetData()[(s-1)*l.vocab:])
	}
	tok := step(prompt, 0)
	start := time.Now()
	pos := len(prompt)
	for range n - 1 {
		tok = step([]int32{tok}, pos)
		pos++
	}
	return time.Since(start), n - 1
}

func (l *bareLoop) close() { l.sess.Destroy() }

// BenchmarkDecodeAt is the per-token time of decode steps with 100 or 2000
// positions already cached: the cost of a longer cache should be only what
// the graph itself does with it. Each iteration decodes 16 positions from
// there; dropping them again between iterations is not timed.
func BenchmarkDecodeAt(b *testing.B) {
	const steps = 16
	for _, shape := range []string{"tiny", "tiny-gqa", "qwen05b"} {
		for _, at := range []int{100, 2000} {
			b.Run(fmt.Sprintf("%s/pos=%d", shape, at), func(b *testing.B) {
				be := openModel(b, benchModel(b, shape), benchOptions())
				ctx := context.Background()
				if err := be.Reserve(at + steps); err != nil {
					b.Fatal(err)
				}
				ids := promptIDs(at)
				for i := 0; i < at; i += 512 {
					if _, err := be.Forward(ctx, ids[i:min(i+512, at)], i); err != nil {
						b.Fatal(err)
					}
				}
				decode := func() {
					for p := at; p < at+steps; p++ {
						if _, err := be.Forward(ctx, []int32{7}, p); err != nil {
							b.Fatal(err)
						}
					}
				}
				decode() // first visits: mask views
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					if err := be.truncate(at); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					decode()
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/token")
			})
		}
	}
}

// BenchmarkDecodeAtBare is BenchmarkDecodeAt's reference: the bare loop of
// BenchmarkOverhead decoding 16 positions after a prompt of 100 or 2000
// tokens (prefill not timed), so the growth from 100 to 2000 can be set
// against what the runtime alone shows.
func BenchmarkDecodeAtBare(b *testing.B) {
	const steps = 16
	for _, shape := range []string{"tiny"} { // a 2000-token bare prefill of the 0.5B shape per iteration is too slow here
		for _, at := range []int{100, 2000} {
			b.Run(fmt.Sprintf("%s/pos=%d", shape, at), func(b *testing.B) {
				cfg := benchShapes()[shape]
				bare := newBareLoop(b, benchModel(b, shape), cfg)
				defer bare.close()
				bare.generate(b, promptIDs(at), steps+1)
				var total time.Duration
				for range b.N {
					d, _ := bare.generate(b, promptIDs(at), steps+1)
					total += d
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*steps), "ns/token")
			})
		}
	}
}

// BenchmarkPrefixReuse: time to first token of a follow-up prompt that
// extends the previous one, against the same prompt on a cold cache.
func BenchmarkPrefixReuse(b *testing.B) {
	be := openModel(b, benchModel(b, "tiny"), benchOptions())
	e, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	first := promptIDs(900)
	follow := append(append([]int32(nil), first...), promptIDs(100)...)
	other := promptIDs(1000)
	other[0] = 200 // shares nothing with follow
	ttft := func(p []int32) time.Duration {
		s, err := e.Stream(context.Background(), engine.Request{PromptIDs: p, MaxTokens: 1})
		if err != nil {
			b.Fatal(err)
		}
		for s.Next() {
		}
		return s.Result().Timings.TimeToFirstToken
	}
	for _, mode := range []string{"reused", "cold"} {
		b.Run(mode, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				ttft(first)
				if mode == "cold" {
					ttft(other) // evict the shared prefix
				}
				total += ttft(follow)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms-ttft")
		})
	}
}

// BenchmarkVersusTransformersJS runs Prism and transformers.js (through
// testdata/transformersjs_bench.mjs, on onnxruntime-node with the same
// ONNX Runtime 1.30) side by side on the same optimum-layout folders:
// greedy, 32 new tokens, after a 16- or 1000-token prompt. It needs node
// and TRANSFORMERS_JS_DIR, a folder where
// `npm install --ignore-scripts @huggingface/transformers` was run.
func BenchmarkVersusTransformersJS(b *testing.B) {
	tjs := os.Getenv("TRANSFORMERS_JS_DIR")
	node, err := exec.LookPath("node")
	if tjs == "" || err != nil {
		b.Skip("set TRANSFORMERS_JS_DIR and put node on PATH")
	}
	for _, shape := range []string{"tiny", "tiny-posmask", "qwen05b", "qwen05b-posmask"} {
		for _, prompt := range []int{16, 1000} {
			dir := ""
			b.Run(fmt.Sprintf("%s/prompt=%d/prism", shape, prompt), func(b *testing.B) {
				dir = benchModel(b, shape)
				be := openModel(b, dir, benchOptions())
				e, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)))
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				b.Logf("kv_cache %s: %s", be.Info().KVCache, be.Info().KVCacheReason)
				var ttft, gen time.Duration
				var tokens int
				for i := range b.N + 1 {
					p := promptIDs(prompt)
					p[0] = int32(1 + i) // no prefix reuse between runs, as on the JS side
					s, err := e.Stream(context.Background(), engine.Request{PromptIDs: p, MaxTokens: benchNewTokens})
					if err != nil {
						b.Fatal(err)
					}
					for s.Next() {
					}
					r := s.Result()
					if i == 0 {
						continue // warm-up
					}
					ttft += r.Timings.TimeToFirstToken
					gen += r.Timings.Generation
					tokens += r.Usage.CompletionTokens - 1
				}
				b.ReportMetric(float64(ttft.Microseconds())/float64(b.N)/1000, "ms-ttft")
				b.ReportMetric(float64(tokens)/gen.Seconds(), "tokens/s")
			})
			b.Run(fmt.Sprintf("%s/prompt=%d/transformersjs", shape, prompt), func(b *testing.B) {
				dir = benchModel(b, shape)
				var ttft, rate float64
				for range b.N {
					cmd := exec.Command(node, filepath.Join("testdata", "transformersjs_bench.mjs"), dir,
						fmt.Sprint(prompt), fmt.Sprint(benchNewTokens), "1")
					cmd.Stderr = os.Stderr
					out, err := cmd.Output()
					if err != nil {
						b.Fatalf("transformers.js: %v", err)
					}
					var r struct {
						TTFT float64 `json:"ttft_ms"`
						Rate float64 `json:"tokens_per_second"`
					}
					if err := json.Unmarshal(out, &r); err != nil {
						b.Fatalf("transformers.js output %q: %v", out, err)
					}
					ttft += r.TTFT
					rate += r.Rate
				}
				b.ReportMetric(ttft/float64(b.N), "ms-ttft")
				b.ReportMetric(rate/float64(b.N), "tokens/s")
			})
		}
	}
}

// BenchmarkRuntimeStep is the ceiling any client of ONNX Runtime can reach
// on a model: one decode step (one new token after 32 cached positions) run
// again and again on the same tensors, made once, with nothing done between
// runs — no sampling, no new tensors, no hand-over. Its steps/s bounds the
// tokens/s of Prism and of transformers.js alike, so it tells how much of
// a gap between the two is left for a client to win.
func BenchmarkRuntimeStep(b *testing.B) {
	const past = 32
	for _, shape := range []string{"tiny", "qwen05b"} {
		b.Run(shape, func(b *testing.B) {
			cfg := benchShapes()[shape]
			l := newBareLoop(b, benchModel(b, shape), cfg)
			defer l.close()
			ids, _ := ort.NewTensor(ort.NewShape(1, 1), []int64{7})
			pos, _ := ort.NewTensor(ort.NewShape(1, 1), []int64{past})
			ones := make([]int64, past+1)
			for i := range ones {
				ones[i] = 1
			}
			mask, _ := ort.NewTensor(ort.NewShape(1, past+1), ones)
			logits, _ := ort.NewEmptyTensor[float32](ort.NewShape(1, 1, l.vocab))
			inputs := []ort.Value{ids, mask, pos}
			outputs := []ort.Value{logits}
			for range 2 * l.layers {
				p, _ := ort.NewEmptyTensor[float32](l.kvShape(past))
				t, _ := ort.NewEmptyTensor[float32](l.kvShape(past + 1))
				inputs, outputs = append(inputs, p), append(outputs, t)
			}
			defer func() {
				for _, v := range append(inputs, outputs...) {
					v.Destroy()
				}
			}()
			for range 3 { // warm-up
				if err := l.sess.Run(inputs, outputs); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if err := l.sess.Run(inputs, outputs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkKVProof is what the proofs at load cost: the step shapes (the
// proof's chunks on a scratch exact hand-over against two whole-prompt
// steps) and the KV cache strategy (the candidate's run of the same
// chunks). proof-ms is that time; the strategy chosen and why go to the
// log.
func BenchmarkKVProof(b *testing.B) {
	for _, shape := range []string{"tiny", "tiny-posmask", "tiny-gqa", "qwen05b", "qwen05b-posmask"} {
		b.Run(shape, func(b *testing.B) {
			dir := benchModel(b, shape)
			var took time.Duration
			for i := range b.N {
				be := openModel(b, dir, benchOptions())
				took += be.proofTook
				if i == 0 {
					b.Logf("kv_cache %s: %s", be.Info().KVCache, be.Info().KVCacheReason)
				}
				be.Close()
			}
			b.ReportMetric(float64(took.Microseconds())/float64(b.N)/1000, "proof-ms")
		})
	}
}

// BenchmarkPrefillChunkTTFT: time to first token of a long prompt
// prefilled in chunks of the default engine.DefaultPrefillChunk (1,024)
// against the whole prompt in one step, side by side: each iteration runs
// both, in turns, on one backend, with a first token no earlier prompt had
// so that nothing is reused. PRISM_BENCH_PREFILL_TOKENS sets the prompt's
// length (default 2,000: one chunk of 1,024 and one of 976).
func BenchmarkPrefillChunkTTFT(b *testing.B) {
	n := 2000
	fmt.Sscan(os.Getenv("PRISM_BENCH_PREFILL_TOKENS"), &n)
	for _, shape := range []string{"tiny", "qwen05b"} {
		b.Run(fmt.Sprintf("%s/prompt=%d", shape, n), func(b *testing.B) {
			be := openModel(b, benchModel(b, shape), benchOptions())
			chunked, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)))
			if err != nil {
				b.Fatal(err)
			}
			defer chunked.Close() // closes the backend the other engine shares
			whole, err := engine.New(be, enginetest.ByteTokenizer{}, engine.WithLogger(testLogger(b)), engine.WithPrefillChunk(0))
			if err != nil {
				b.Fatal(err)
			}
			first := int32(0)
			ttft := func(e *engine.Engine) time.Duration {
				ids := promptIDs(n)
				first++
				ids[0] = 1 + first%250 // shares no prefix with the prompt before
				s, err := e.Stream(context.Background(), engine.Request{PromptIDs: ids, MaxTokens: 1})
				if err != nil {
					b.Fatal(err)
				}
				for s.Next() {
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				if c := s.Result().Usage.CachedTokens; c != 0 {
					b.Fatalf("%d tokens reused", c)
				}
				return s.Result().Timings.TimeToFirstToken
			}
			var tc, tw time.Duration
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 {
					tc += ttft(chunked)
					tw += ttft(whole)
				} else {
					tw += ttft(whole)
					tc += ttft(chunked)
				}
			}
			b.ReportMetric(float64(tc.Milliseconds())/float64(b.N), "ms-ttft-chunked")
			b.ReportMetric(float64(tw.Milliseconds())/float64(b.N), "ms-ttft-whole")
		})
	}
}
