//go:build cgo

package onnx

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/onnxgen"
)

// squareMask is the generator's form of the model builder's
// MultiHeadAttention export: the mask rebuilt inside the graph as a square
// over the step's tokens, which the runtime cannot expand over a past.
func squareMask(layout onnxgen.Layout) onnxgen.Config {
	c := onnxgen.Tiny()
	c.Layout = layout
	c.Mask = onnxgen.MaskSquare
	return c
}

// The step proof at load finds which graphs take a multi-token step on a
// past, says so in ModelInfo and the load log, and leaves nothing behind.
// A square-mask graph prefills whole, and its cache strategy is proven on
// the steps the engine will still take.
func TestStepProof(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     onnxgen.Config
		prefill string
		kv      string
		reason  string
	}{
		{"optimum-fp32", variants()["optimum-fp32"], engine.PrefillChunked, KVPadded, "proven on this graph"},
		{"gqa-fp16", variants()["gqa-fp16"], engine.PrefillChunked, KVSharedBuffer, "proven on this graph"},
		{"genai-fp32", variants()["genai-fp32"], engine.PrefillChunked, KVExact, "proven on this graph"},
		{"genai-mask-square", squareMask(onnxgen.LayoutGenAI), engine.PrefillWhole, KVExact, "a 2-token step on a past of 5 positions fails"},
		{"optimum-mask-square", squareMask(onnxgen.LayoutOptimum), engine.PrefillWhole, KVPadded, "invalid expand shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			b := openModel(t, modelDir(t, "random-"+tc.name, tc.cfg), Options{Logger: logTo(&log)})
			info := b.Info()
			if info.Prefill != tc.prefill || info.KVCache != tc.kv || !strings.Contains(info.PrefillReason, tc.reason) {
				t.Fatalf("prefill %s (%s), cache %s (%s); want %s with %q and %s",
					info.Prefill, info.PrefillReason, info.KVCache, info.KVCacheReason, tc.prefill, tc.reason, tc.kv)
			}
			if !strings.Contains(log.String(), "prefill="+tc.prefill) {
				t.Errorf("load log lacks prefill=%s:\n%s", tc.prefill, log.String())
			}
			if tc.prefill == engine.PrefillWhole && !strings.Contains(log.String(), "level=WARN msg=\"the graph takes no multi-token step on a past") {
				t.Errorf("load log lacks the warning:\n%s", log.String())
			}
			if b.cached != 0 || b.Capacity() != 1 {
				t.Fatalf("after the proof: %d cached, capacity %d", b.cached, b.Capacity())
			}
			t.Log(info.PrefillReason)
		})
	}
}

// A graph whose one-token step disagrees with a whole-prompt step over
// the same tokens is kept (every decode runs that step) but never
// silently: the load log warns, and ModelInfo's prefill reason says by how
// much. The same graph without the fault has neither.
func TestDecodeDisagreementWarned(t *testing.T) {
	const warning = `level=WARN msg="the graph's decode step disagrees with a whole-prompt step"`
	for _, skew := range []bool{true, false} {
		c := onnxgen.Tiny()
		c.DecodeSkew = skew
		var log strings.Builder
		b := openModel(t, modelDir(t, fmt.Sprintf("random-decode-skew-%v", skew), c), Options{Logger: logTo(&log)})
		info := b.Info()
		noted := strings.Contains(info.PrefillReason, "a one-token step on a past of")
		if warned := strings.Contains(log.String(), warning); warned != skew || noted != skew {
			t.Fatalf("decode skew %v: warned %v, noted %v (%s); load log:\n%s", skew, warned, noted, info.PrefillReason, log.String())
		}
		if claims := strings.Contains(info.PrefillReason, "one-token and"); claims == skew {
			t.Fatalf("decode skew %v: the reason claims a proven one-token step %v: %s", skew, claims, info.PrefillReason)
		}
		if info.Prefill != engine.PrefillChunked {
			t.Fatalf("decode skew %v: prefill %s (%s)", skew, info.Prefill, info.PrefillReason)
		}
		t.Log(info.PrefillReason)
	}
}

// lfm2Like is a hybrid decoder laid out as LFM2 is: convolution layers
// first and between the attention layers.
func lfm2Like(dt onnxgen.DType) onnxgen.Config {
	c := onnxgen.Tiny()
	c.Layers, c.ConvLayers, c.DType = 3, []int{0, 2}, dt
	return c
}

// lfm2Genai is lfm2Like in the genai layout, as the model builder writes
// LFM2 (layer_types, conv_cache_size, past_conv_names).
func lfm2Genai() onnxgen.Config {
	c := lfm2Like(onnxgen.FP32)
	c.Layout = onnxgen.LayoutGenAI
	return c
}

// linearLike is a hybrid decoder whose non-attention layers carry a
// recurrent state (past_recurrent.N), as linear-attention layers do, and
// a convolution layer besides.
func linearLike(dt onnxgen.DType) onnxgen.Config {
	c := onnxgen.Tiny()
	c.Layers, c.ConvLayers, c.RecurrentLayers, c.DType = 4, []int{3}, []int{0, 2}, dt
	return c
}

// qwen35Like is linearLike with its states named as onnxruntime-genai's
// model builder names Qwen3.5's linear-attention states
// (past_key_values.N.conv_state → present.N.conv_state,
// past_key_values.N.recurrent_state → present.N.recurrent_state), in the
// given layout.
func qwen35Like(layout onnxgen.Layout, dt onnxgen.DType) onnxgen.Config {
	c := linearLike(dt)
	c.Layout, c.StateNames = layout, onnxgen.StatesKV
	return c
}

// longPrompt is a prompt of n bytes (tokens of the byte tokenizer).
func longPrompt(n int) string {
	const text = "Prism runs local models on ONNX Runtime; a long system prompt goes first. "
	return strings.Repeat(text, n/len(text)+1)[:n]
}

// A 300-token prompt and a multi-turn conversation that extends it give
// the oracle's greedy tokens on a graph that takes chunks (prefilled in
// chunks of 64 and reusing the cached prefix) and on the square-mask
// graph (prefilled whole, the prefix re-prefilled).
func TestLongPromptAndConversationMatchOracle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    onnxgen.Config
		whole  bool
		chunks int
	}{
		{"optimum-fp32", variants()["optimum-fp32"], false, 64},
		{"gqa-fp32", variants()["gqa-fp32"], false, 64},
		{"genai-combined-past", variants()["genai-combined-past"], false, 64},
		{"gpt2-combined-past-fp16", func() onnxgen.Config {
			c := onnxgen.Tiny()
			c.CombinedPast, c.DType = true, onnxgen.FP16
			return c
		}(), false, 64},
		{"lfm2-like-hybrid-fp16", lfm2Like(onnxgen.FP16), false, 64},
		{"lfm2-like-hybrid-genai", lfm2Genai(), false, 64},
		{"linear-attention-like-hybrid", linearLike(onnxgen.FP32), false, 64},
		{"linear-attention-like-hybrid-fp16", linearLike(onnxgen.FP16), false, 64},
		{"qwen35-like-hybrid", qwen35Like(onnxgen.LayoutOptimum, onnxgen.FP32), false, 64},
		{"qwen35-like-hybrid-fp16", qwen35Like(onnxgen.LayoutOptimum, onnxgen.FP16), false, 64},
		{"qwen35-like-hybrid-genai", qwen35Like(onnxgen.LayoutGenAI, onnxgen.FP32), false, 64},
		{"qwen35-like-hybrid-genai-fp16", qwen35Like(onnxgen.LayoutGenAI, onnxgen.FP16), false, 64},
		{"qwen35-like-hybrid-genai-past-names", func() onnxgen.Config {
			c := qwen35Like(onnxgen.LayoutGenAI, onnxgen.FP16)
			c.StateNames = onnxgen.StatesPast
			return c
		}(), false, 64},
		{"lfm2-like-hybrid-square", func() onnxgen.Config {
			c := lfm2Like(onnxgen.FP32)
			c.Mask = onnxgen.MaskSquare
			return c
		}(), true, 0},
		{"genai-mask-square", squareMask(onnxgen.LayoutGenAI), true, 0},
		{"optimum-mask-square-fp16", func() onnxgen.Config {
			c := squareMask(onnxgen.LayoutOptimum)
			c.DType = onnxgen.FP16
			return c
		}(), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := byteModel(tc.cfg, "")
			cfg.Context = 512
			var log strings.Builder
			b := openModel(t, modelDir(t, "long-conv-"+tc.name, cfg), Options{Logger: logTo(&log)})
			if whole := b.Info().Prefill == engine.PrefillWhole; whole != tc.whole {
				t.Fatalf("prefill %s, want whole %v", b.Info().Prefill, tc.whole)
			}
			if cfg.StateNames != onnxgen.StatesLFM2 {
				// Each state is paired with its output by the KV cache's
				// rule: past_key_values.N.x or past.N.x → present.N.x.
				for _, st := range b.io.states {
					l, kind, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(st.in, "past_key_values."), "past."), ".")
					if !ok || st.out != "present."+l+"."+kind || !slices.Contains([]string{"conv_state", "recurrent_state", "conv", "recurrent"}, kind) {
						t.Fatalf("state %q paired with %q", st.in, st.out)
					}
				}
			}
			// The step proof's outcome is in the load log, the states with it.
			states := fmt.Sprintf("states=%d", len(cfg.ConvLayers)+len(cfg.RecurrentLayers))
			for _, w := range []string{"prefill=" + b.Info().Prefill, "prefill_reason=", states} {
				if !strings.Contains(log.String(), w) {
					t.Fatalf("load log lacks %s:\n%s", w, log.String())
				}
			}
			o, err := onnxgen.NewOracle(cfg)
			if err != nil {
				t.Fatal(err)
			}
			opts := []engine.Option{engine.WithLoopGuard(engine.LoopGuard{Off: true})}
			if tc.chunks > 0 {
				opts = append(opts, engine.WithPrefillChunk(tc.chunks))
			}
			e := newEngineOn(t, b, opts...)
			tok := enginetest.ByteTokenizer{}
			history := longPrompt(300)
			for turn, user := range []string{"", " And then?", " Tell me more."} {
				prompt := history + user
				ids := tok.Encode(prompt)
				want := o.Greedy(ids, 24, []int32{enginetest.EOS})
				got, _, res, err := collect(t, e, t.Context(), engine.Request{PromptIDs: ids, MaxTokens: 24})
				if err != nil {
					t.Fatalf("turn %d: %v", turn, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("turn %d (%d prompt tokens):\nengine %v\noracle %v", turn, len(ids), got, want)
				}
				reused := res.Usage.CachedTokens
				// The last reply token was never fed to the model: all but it are cached.
				if tc.whole && reused != 0 || !tc.whole && turn > 0 && reused < len(tok.Encode(history))-1 {
					t.Fatalf("turn %d reused %d cached tokens (whole prefill %v)", turn, reused, tc.whole)
				}
				history = prompt + tok.Decode(got, true)
			}
		})
	}
}

// A graph that prefills whole takes prompts of at most the prefill chunk
// the memory budget was sized for: a longer one gets a typed
// context_length_exceeded naming why, before any model work, and the
// engine stays usable.
func TestWholePrefillOverChunk(t *testing.T) {
	cfg := byteModel(squareMask(onnxgen.LayoutGenAI), "")
	cfg.Context = 512
	b := openModel(t, modelDir(t, "long-conv-genai-mask-square", cfg), Options{})
	e := newEngineOn(t, b, engine.WithPrefillChunk(64))
	tok := enginetest.ByteTokenizer{}
	_, _, _, err := collect(t, e, t.Context(), engine.Request{PromptIDs: tok.Encode(longPrompt(100)), MaxTokens: 4})
	var cle *engine.ContextLengthError
	if !errors.As(err, &cle) || cle.MaxPrompt != 64 || errcode.Of(err) != errcode.ContextLengthExceeded ||
		!strings.Contains(err.Error(), "cannot take a prompt in chunks") || !strings.Contains(err.Error(), "PRISM_PREFILL_CHUNK") {
		t.Fatalf("want a ContextLengthError with MaxPrompt 64 saying why; got %v", err)
	}
	t.Log(err)
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(longPrompt(64))
	got, _, _, err := collect(t, e, t.Context(), engine.Request{PromptIDs: ids, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	if want := o.Greedy(ids, 8, []int32{enginetest.EOS}); !slices.Equal(got, want) {
		t.Fatalf("engine %v\noracle %v", got, want)
	}
}

// A hybrid decoder's convolution state cannot be cut back: a request that
// shares only part of the cached positions restores the newest snapshot
// at or before the shared prefix (taken at each prefill chunk's end) and
// runs the rest again. Prompts that diverge at a chunk's end, inside a
// chunk, inside the reply and at the first token all give the oracle's
// greedy tokens.
func TestHybridStateRewind(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  onnxgen.Config
	}{
		{"lfm2-like-hybrid", lfm2Like(onnxgen.FP32)},
		{"linear-attention-like-hybrid", linearLike(onnxgen.FP32)},
		{"qwen35-like-hybrid-genai", qwen35Like(onnxgen.LayoutGenAI, onnxgen.FP32)},
	} {
		t.Run(tc.name, func(t *testing.T) { testStateRewind(t, tc.name, tc.cfg) })
	}
}

func testStateRewind(t *testing.T, name string, model onnxgen.Config) {
	cfg := byteModel(model, "")
	cfg.Context = 512
	b := openModel(t, modelDir(t, "long-conv-"+name, cfg), Options{})
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngineOn(t, b, engine.WithPrefillChunk(64), engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	tok := enginetest.ByteTokenizer{}
	base := tok.Encode(longPrompt(200))
	run := func(ids []int32) []int32 {
		t.Helper()
		want := o.Greedy(ids, 12, []int32{enginetest.EOS})
		got, _, res, err := collect(t, e, t.Context(), engine.Request{PromptIDs: ids, MaxTokens: 12})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d prompt tokens (%d reused):\nengine %v\noracle %v", len(ids), res.Usage.CachedTokens, got, want)
		}
		return got
	}
	reply := run(base)
	if n := len(b.st.snaps); n == 0 || n > maxSnapshots || b.st.snaps[n-1].pos != len(base) {
		t.Fatalf("after a prefill of %d tokens in chunks of 64: snapshots %v", len(base), snapshotPositions(b.st))
	}
	with := func(prefix []int32, tail string) []int32 {
		return append(slices.Clone(prefix), tok.Encode(tail)...)
	}
	run(with(append(slices.Clone(base), reply[:5]...), " no, differently")) // diverges inside the reply
	run(with(base[:128], " a new ending"))                                  // at a chunk's end
	run(with(base[:150], " another ending"))                                // inside a chunk
	run(with(base[:1], "x"))                                                // after the first token
}

func snapshotPositions(c *stateCache) []int {
	var out []int
	for _, s := range c.snaps {
		out = append(out, s.pos)
	}
	return out
}

// genai_config.json's fixed state_groups name a hybrid decoder's states:
// the generator's genai LFM2 folder with its past_conv_names replaced by a
// state group loads with the same states and gives the oracle's tokens.
func TestGenAIStateGroups(t *testing.T) {
	testStateGroups(t, lfm2Genai(), 1, 2, []any{map[string]any{"kind": "fixed", "layer_ids": []any{0, 2},
		"bindings": map[string]any{"state": map[string]any{"input": "past_conv.%d", "output": "present_conv.%d"}}}})
}

// State groups of kind fixed_conv and fixed_recurrent (as the model
// builder writes Qwen3.5's) list the layers whose states past_conv_names
// and past_recurrent_names name; without those keys the states have
// onnxruntime-genai's default names (past_key_values.N.conv_state →
// present.N.conv_state and the recurrent state alike), which the engine
// pairs the same way.
func TestGenAIStateGroupsLinearAttention(t *testing.T) {
	testStateGroups(t, qwen35Like(onnxgen.LayoutGenAI, onnxgen.FP32), 0, 3, []any{
		map[string]any{"kind": "fixed_conv", "layer_ids": []any{3}},
		map[string]any{"kind": "fixed_recurrent", "layer_ids": []any{0, 2}}})
}

// testStateGroups writes model's genai folder with its state names
// replaced by groups and checks that it loads with templates templates
// from the config and states states, giving the oracle's tokens.
func testStateGroups(t *testing.T, model onnxgen.Config, templates, states int, groups []any) {
	cfg := byteModel(model, "")
	dir := writeModel(t, cfg)
	path := filepath.Join(dir, "genai_config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	dec := root["model"].(map[string]any)["decoder"].(map[string]any)
	for _, k := range []string{"past_conv_names", "past_recurrent_names"} {
		delete(dec["inputs"].(map[string]any), k)
	}
	for _, k := range []string{"present_conv_names", "present_recurrent_names"} {
		delete(dec["outputs"].(map[string]any), k)
	}
	dec["state_groups"] = groups
	if data, err = json.Marshal(root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b := openModel(t, dir, Options{})
	if len(b.cfg.states) != templates || len(b.io.states) != states {
		t.Fatalf("config states %v, graph states %d; want %d templates and %d states", b.cfg.states, len(b.io.states), templates, states)
	}
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngineOn(t, b, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	ids := enginetest.ByteTokenizer{}.Encode("Hello, prism! Tell me a story.")
	got, _, _, err := collect(t, e, t.Context(), engine.Request{PromptIDs: ids, MaxTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if want := o.Greedy(ids, 16, []int32{enginetest.EOS}); !slices.Equal(got, want) {
		t.Fatalf("engine %v\noracle %v", got, want)
	}
}
