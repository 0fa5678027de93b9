//go:build cgo

package onnx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// Each variant gets the strategy its graph allows and proves, and says
// why in ModelInfo; a graph the padded past breaks falls back to the exact
// hand-over naming the failed proof, and ExactHandover forces it.
func TestCacheStrategyProof(t *testing.T) {
	for _, tc := range []struct {
		variant string
		exact   bool
		want    string
		reason  string
	}{
		{"optimum-fp32", false, KVPadded, "proven on this graph"},
		{"optimum-int4", false, KVPadded, "proven on this graph"},
		{"optimum-mask-positions", false, KVExact, "present-to-past-padded failed its proof on this graph"},
		{"genai-fp32", false, KVExact, "may read attention_mask as lengths"},
		{"gqa-fp32", false, KVSharedBuffer, "proven on this graph"},
		{"gqa-fp16", false, KVSharedBuffer, "proven on this graph"},
		{"optimum-fp32", true, KVExact, "Options.ExactHandover"},
		{"gqa-fp32", true, KVExact, "Options.ExactHandover"},
	} {
		name := tc.variant
		if tc.exact {
			name += "-exact"
		}
		t.Run(name, func(t *testing.T) {
			b := openModel(t, modelDir(t, "random-"+tc.variant, variants()[tc.variant]), Options{ExactHandover: tc.exact})
			info := b.Info()
			if info.KVCache != tc.want || b.cacheKind() != tc.want || !strings.Contains(info.KVCacheReason, tc.reason) {
				t.Fatalf("cache %s (%s), reason %q; want %s with %q", info.KVCache, b.cacheKind(), info.KVCacheReason, tc.want, tc.reason)
			}
			// The proof leaves nothing behind: no positions, a fresh cache
			// of the minimal reserve.
			if b.cached != 0 || b.Capacity() != 1 {
				t.Fatalf("after the proof: %d cached, capacity %d", b.cached, b.Capacity())
			}
			t.Log(info.KVCacheReason)
		})
	}
}

func TestProofIDsFitAnyVocabulary(t *testing.T) {
	for _, vocab := range []int{1, 2, 7, 258, 151669} {
		for _, id := range proofIDs(vocab, 12) {
			if id < 0 || int(id) >= vocab {
				t.Fatalf("vocabulary %d: proof id %d", vocab, id)
			}
		}
	}
}

// The position-based mask form, in every cache strategy that can serve it
// (the padded past cannot: TestPaddedPastBreaksPositionMask), gives the
// oracle's greedy tokens through the engine, token for token, and its
// logits at every step of a prefill, decode steps, a chunk and prefix reuse
// (TestForwardMatchesOracle runs the same variants).
func TestPositionMaskGreedyMatchesOracle(t *testing.T) {
	prompt := "Hello, prism! Tell me a story."
	for _, tc := range []struct {
		variant string
		opts    Options
		want    string
	}{
		{"optimum-mask-positions", Options{}, KVExact},
		{"optimum-mask-positions", Options{ExactHandover: true}, KVExact},
		{"optimum-mask-positions-fp16", Options{}, KVExact},
		{"genai-mask-positions", Options{}, KVExact},
		{"optimum-fp32", Options{}, KVPadded}, // the cache-index form keeps its padded past
	} {
		name := tc.variant
		if tc.opts.ExactHandover {
			name += "-forced-exact"
		}
		t.Run(name, func(t *testing.T) {
			cfg := byteModel(variants()[tc.variant], "")
			b := openModel(t, modelDir(t, "random-"+tc.variant, cfg), tc.opts)
			if got := b.Info().KVCache; got != tc.want {
				t.Fatalf("cache %s, want %s (%s)", got, tc.want, b.Info().KVCacheReason)
			}
			o, err := onnxgen.NewOracle(cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := o.Greedy(enginetest.ByteTokenizer{}.Encode(prompt), 40, []int32{enginetest.EOS})
			e := newEngineOn(t, b, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
			got, _, _, err := collect(t, e, t.Context(), engine.Request{Prompt: prompt, MaxTokens: 40})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("engine %v\noracle %v", got, want)
			}
		})
	}
}

// A merged decoder (onnx/decoder_model_merged.onnx, with use_cache_branch)
// is found beside the unmerged pair an optimum export also writes, gets
// use_cache_branch false on its first step (an empty past) and true after,
// and agrees with the oracle; TestForwardMatchesOracle and the engine tests
// run it as the optimum-merged variant.
func TestMergedDecoderFolder(t *testing.T) {
	cfg := variants()["optimum-merged"]
	dir := writeModel(t, cfg)
	merged, err := os.ReadFile(filepath.Join(dir, onnxgen.MergedModelFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"decoder_model.onnx", "decoder_with_past_model.onnx"} {
		if err := os.WriteFile(filepath.Join(dir, "onnx", f), merged, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := openModel(t, dir, Options{})
	if got := filepath.Base(b.cfg.graphPath); got != "decoder_model_merged.onnx" || b.io.useCache == "" {
		t.Fatalf("graph %s, use_cache_branch input %q", got, b.io.useCache)
	}
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := stepper{t: t, b: b, o: o, tol: tolerance(cfg)}
	logits := s.step([]int32{4, 8, 15, 16, 23}, 0)
	for pos := 5; pos < 12; pos++ {
		logits = s.step([]int32{argmaxOf(logits)}, pos)
	}
	s.step([]int32{42}, 0) // back to the branch without past
	s.step([]int32{7, 9}, 1)
}

// A context too short for the proof gets the exact hand-over, never an
// unproven fast strategy.
func TestShortContextSkipsUnprovableStrategy(t *testing.T) {
	cfg := variants()["optimum-fp32"]
	cfg.Context = proofLength() - 1
	b := openModel(t, writeModel(t, cfg), Options{})
	if info := b.Info(); info.KVCache != KVExact || !strings.Contains(info.KVCacheReason, "shorter than the proof") {
		t.Fatalf("cache %s (%s), want the exact hand-over", info.KVCache, info.KVCacheReason)
	}
}

// A graph that fixes the length of its past (a static KV buffer, as
// static-shape builds declare the shared buffer) is refused by the runtime
// on the exact hand-over, whose past grows, so a proof has nothing to
// compare with. A shared buffer is then kept unproven, said in a warning
// and in KVCacheReason, and still decodes the oracle's tokens; a padded
// past is never kept unproven: the load fails with a GraphError, and so
// does an exact hand-over asked for on such a graph.
func TestUnprovableStrategy(t *testing.T) {
	static := byteModel(variants()["gqa-fp32"], "")
	static.StaticCache = true
	dir := modelDir(t, "random-gqa-static-cache", static)

	t.Run("shared-buffer-kept-unproven", func(t *testing.T) {
		var log strings.Builder
		b := openModel(t, dir, Options{Logger: logTo(&log)})
		info := b.Info()
		if info.KVCache != KVSharedBuffer || b.cacheKind() != KVSharedBuffer {
			t.Fatalf("cache %s (%s): %s", info.KVCache, b.cacheKind(), info.KVCacheReason)
		}
		for _, want := range []string{"genai_config.json sets search.past_present_share_buffer", "not proven on this graph: the exact hand-over cannot run on it", "invalid dimensions"} {
			if !strings.Contains(info.KVCacheReason, want) {
				t.Errorf("KVCacheReason %q lacks %q", info.KVCacheReason, want)
			}
		}
		for _, want := range []string{`level=WARN msg="KV cache strategy not proven: the exact hand-over it is compared with cannot run on this graph"`, "strategy=shared-buffer", "kv_cache=shared-buffer"} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("load log lacks %s:\n%s", want, log.String())
			}
		}
		t.Log(log.String())
		if info.ContextLength != static.Context || b.Capacity() != static.Context {
			t.Fatalf("context %d, capacity %d; want the graph's buffer of %d", info.ContextLength, b.Capacity(), static.Context)
		}
		o, err := onnxgen.NewOracle(static)
		if err != nil {
			t.Fatal(err)
		}
		// Steps past what was reserved (the load reserves one position)
		// and a rewind agree with the oracle's logits.
		s := stepper{t: t, b: b, o: o, tol: tolerance(static)}
		logits := s.step([]int32{4, 8, 15, 16, 23}, 0)
		for pos := 5; pos < 9; pos++ {
			logits = s.step([]int32{argmaxOf(logits)}, pos)
		}
		s.step([]int32{42, 7}, 3)
		e := newEngineOn(t, b, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
		// The second prompt starts with the first, so its request reuses
		// the cached prefix and rewinds the mask inside the same buffer.
		for _, prompt := range []string{"Hello, prism! Tell me a story.", "Hello, prism! Tell me another one, longer."} {
			want := o.Greedy(enginetest.ByteTokenizer{}.Encode(prompt), 40, []int32{enginetest.EOS})
			got, _, _, err := collect(t, e, t.Context(), engine.Request{Prompt: prompt, MaxTokens: 40})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("prompt %q:\nengine %v\noracle %v", prompt, got, want)
			}
		}
	})

	refused := func(t *testing.T, dir string, exact bool, want string) {
		t.Helper()
		_, err := Open(t.Context(), dir, Options{Device: DeviceCPU, ORTLibrary: fixtures.ORTLib(t), Logger: testLogger(t), ExactHandover: exact})
		var ge *GraphError
		var le *engine.ModelLoadError
		if !errors.As(err, &ge) || !errors.As(err, &le) || !strings.Contains(err.Error(), want) {
			t.Fatalf("want a ModelLoadError with a GraphError saying %q; got %v", want, err)
		}
		t.Log(err)
	}
	t.Run("exact-handover-asked-for", func(t *testing.T) {
		refused(t, dir, true, fmt.Sprintf("fixed length of %d positions", static.Context))
	})
	t.Run("padded-past-never-unproven", func(t *testing.T) {
		padded := byteModel(variants()["optimum-fp32"], "")
		padded.StaticCache = true
		refused(t, writeModel(t, padded), false, "the exact present-to-past hand-over cannot run on it")
	})
}
