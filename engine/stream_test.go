package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

func quiet() engine.Option { return engine.WithLogger(slog.New(slog.DiscardHandler)) }

// cycling returns a backend that, after the prompt, emits the ids of cycle
// over and over.
func cycling(cycle string) *enginetest.Backend {
	b := enginetest.NewBackend("", 0)
	ids := enginetest.ByteTokenizer{}.Encode(cycle)
	b.Logits = func(dst []float32, _ []int32, step int) {
		clear(dst)
		dst[ids[step%len(ids)]] = 30
	}
	return b
}

func TestLoopGuard(t *testing.T) {
	cases := []struct {
		name     string
		opts     []engine.Option
		cycle    string
		wantN    int
		wantLoop bool
	}{
		{"default guard stops a one-token run", nil, "x", 64, true},
		{"default guard stops a sentence loop", nil, "I am stuck. ", 12 * 8, true},
		{"off by option", []engine.Option{engine.WithLoopGuard(engine.LoopGuard{Off: true})}, "x", 300, false},
		// PRISM_LOOP_GUARD=off reaches the engine as this option: prism's
		// TestEnvReachesTheEngine runs the same case through the settings.
		{"custom guard", []engine.Option{engine.WithLoopGuard(engine.LoopGuard{MaxPeriod: 4, MinRepeats: 3, MinSpan: 0})}, "ab", 6, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := enginetest.NewEngineBackend(t, cycling(c.cycle), append([]engine.Option{quiet()}, c.opts...)...)
			text, res, err := e.Generate(context.Background(), engine.Request{Prompt: "go", MaxTokens: 300})
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage.CompletionTokens != c.wantN || res.LoopGuard != c.wantLoop || res.FinishReason != engine.FinishLength {
				t.Errorf("%d tokens, loop guard %v, finish %q; want %d, %v, length", res.Usage.CompletionTokens, res.LoopGuard, res.FinishReason, c.wantN, c.wantLoop)
			}
			if len(text) != res.Usage.CompletionTokens {
				t.Errorf("text has %d bytes for %d tokens", len(text), res.Usage.CompletionTokens)
			}
		})
	}
}

func TestLoopGuardWarns(t *testing.T) {
	var logs strings.Builder
	e, _ := enginetest.NewEngineBackend(t, cycling("x"), engine.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if _, _, err := e.Generate(context.Background(), engine.Request{Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "repeating token cycle") {
		t.Errorf("no warning logged: %q", logs.String())
	}
}

func TestPrefillChunksAndReserve(t *testing.T) {
	prompt := strings.Repeat("abcdefghij", 25) // 250 tokens
	cases := []struct {
		name          string
		opts          []engine.Option
		wantForwards  int
		wantMaxChunk  int
		wantPositions int
	}{
		{"default 1024 is one step", nil, 1, 250, 250},
		{"chunk 100", []engine.Option{engine.WithPrefillChunk(100)}, 3, 100, 250},
		{"chunk 0 is the whole prompt", []engine.Option{engine.WithPrefillChunk(0)}, 1, 250, 250},
		{"chunk 64", []engine.Option{engine.WithPrefillChunk(64)}, 4, 64, 250},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, b := enginetest.NewEngineBackend(t, enginetest.NewBackend("ok", 0), c.opts...)
			s, err := e.Stream(context.Background(), engine.Request{Prompt: prompt, MaxTokens: 10})
			if err != nil {
				t.Fatal(err)
			}
			st := b.Stats()
			if st.Forwards != c.wantForwards || st.MaxChunk != c.wantMaxChunk || st.Positions != c.wantPositions {
				t.Errorf("prefill stats %+v, want %d forwards, max chunk %d, %d positions", st, c.wantForwards, c.wantMaxChunk, c.wantPositions)
			}
			if st.Reserved != 260 {
				t.Errorf("reserved %d positions, want prompt+max_tokens = 260", st.Reserved)
			}
			s.Close()
		})
	}
	// A malformed PRISM_PREFILL_CHUNK is refused by internal/config (and
	// through prism.WithEnv, TestEnvReachesTheEngine); the engine refuses a
	// value it cannot use.
	if _, err := engine.New(enginetest.NewBackend("", 0), enginetest.ByteTokenizer{}, engine.WithPrefillChunk(-1)); err == nil || !strings.Contains(err.Error(), "prefill chunk") {
		t.Errorf("negative prefill chunk: %v", err)
	}
}

func TestPrefixReuseComputesOnlyTheNewTokens(t *testing.T) {
	e, b := enginetest.NewEngineBackend(t, enginetest.NewBackend("answer", 0))
	turn1 := strings.Repeat("x", 100)
	reply, _, err := e.Generate(context.Background(), engine.Request{Prompt: turn1})
	if err != nil {
		t.Fatal(err)
	}
	before := b.Stats().Positions
	turn2 := turn1 + reply + "more"
	_, res, err := e.Generate(context.Background(), engine.Request{Prompt: turn2})
	if err != nil {
		t.Fatal(err)
	}
	// The cache holds turn1 and the reply's tokens that were fed back
	// (all but the EOS); only "more" remains to compute.
	prefill := b.Stats().Positions - before - (res.Usage.CompletionTokens - 1)
	if res.Usage.CachedTokens != len(turn1)+len(reply) || prefill != 4 {
		t.Errorf("cached %d, prefilled %d positions; want %d cached and 4 computed", res.Usage.CachedTokens, prefill, len(turn1)+len(reply))
	}
	// A prompt that diverges early recomputes from the divergence.
	_, res, _ = e.Generate(context.Background(), engine.Request{Prompt: "xxy"})
	if res.Usage.CachedTokens != 2 {
		t.Errorf("diverging prompt reused %d tokens, want 2", res.Usage.CachedTokens)
	}
}

func TestForwardErrorsAndCancellation(t *testing.T) {
	boom := errors.New("device lost")
	t.Run("prefill error is returned by Stream", func(t *testing.T) {
		b := enginetest.NewBackend("ok", 0)
		b.Hook = func(context.Context, []int32, int) error { return boom }
		e, _ := enginetest.NewEngineBackend(t, b)
		if _, err := e.Stream(context.Background(), engine.Request{Prompt: "hi"}); !errors.Is(err, boom) {
			t.Fatalf("err = %v, want it to wrap the backend's", err)
		}
	})
	t.Run("decode error ends the stream", func(t *testing.T) {
		b := enginetest.NewBackend("okay", 0)
		b.Hook = func(_ context.Context, ids []int32, pos int) error {
			if pos == 4 {
				return boom
			}
			return nil
		}
		e, _ := enginetest.NewEngineBackend(t, b)
		text, res, err := e.Generate(context.Background(), engine.Request{Prompt: "hi"})
		if !errors.Is(err, boom) || text != "oka" || res.Usage.CompletionTokens != 3 {
			t.Fatalf("got %q, %d tokens, %v", text, res.Usage.CompletionTokens, err)
		}
	})
	t.Run("cancel during a forward step", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b := enginetest.NewBackend("a long reply that never ends", 0)
		b.Hook = func(ctx context.Context, ids []int32, pos int) error {
			if pos == 6 {
				cancel() // the client goes away while the model computes
			}
			return nil
		}
		e, _ := enginetest.NewEngineBackend(t, b)
		s, err := e.Stream(ctx, engine.Request{Prompt: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for s.Next() {
			n++
		}
		if n != 5 || !errors.Is(s.Err(), context.Canceled) || s.Result().FinishReason != engine.FinishCancelled {
			t.Errorf("%d tokens, err %v, finish %q; want 5, canceled, cancelled", n, s.Err(), s.Result().FinishReason)
		}
		// The engine is free and its cache consistent.
		text, _, err := e.Generate(context.Background(), engine.Request{Prompt: "hi"})
		if err != nil || text != "a long reply that never ends" {
			t.Errorf("after cancel: %q, %v", text, err)
		}
	})
}

func TestStreamsOnOneEngineAreSerialised(t *testing.T) {
	e := enginetest.NewEngine(t, "one at a time")
	s1, err := e.Stream(context.Background(), engine.Request{Prompt: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := e.Stream(ctx, engine.Request{Prompt: "b"})
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("second stream while the first runs: %v, want to wait and then see its context cancelled", err)
	}
	done := make(chan string, 1)
	go func() {
		text, _, _ := e.Generate(context.Background(), engine.Request{Prompt: "c"})
		done <- text
	}()
	for s1.Next() {
	}
	if text := <-done; text != "one at a time" {
		t.Errorf("second stream after the first ended: %q", text)
	}
}

func TestEOSIsTheUnionOfBackendAndTokenizer(t *testing.T) {
	b := enginetest.NewBackend("abc", 0)
	b.ModelInfo.EOS = []int32{'b'}
	e, _ := enginetest.NewEngineBackend(t, b)
	if eos := e.Info().EOS; len(eos) != 2 || eos[0] != 'b' || eos[1] != enginetest.EOS {
		t.Errorf("EOS = %v", eos)
	}
	text, res, _ := e.Generate(context.Background(), engine.Request{Prompt: "x"})
	if text != "a" || res.FinishReason != engine.FinishStop || res.Usage.CompletionTokens != 2 {
		t.Errorf("got %q %q %d; want the backend's EOS to stop after a", text, res.FinishReason, res.Usage.CompletionTokens)
	}
}

func TestKeepSpecial(t *testing.T) {
	e := enginetest.NewEngine(t, "hi")
	text, _, _ := e.Generate(context.Background(), engine.Request{Prompt: "x", KeepSpecial: true})
	if text != "hi<|eos|>" {
		t.Errorf("KeepSpecial text = %q", text)
	}
}

func TestIncompleteUTF8IsHeldUntilComplete(t *testing.T) {
	e := enginetest.NewEngine(t, "a→b")
	s, err := e.Stream(context.Background(), engine.Request{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for s.Next() {
		pieces = append(pieces, s.Token().Text())
	}
	want := []string{"a", "", "", "→", "b", ""}
	if strings.Join(pieces, "|") != strings.Join(want, "|") {
		t.Errorf("pieces %q, want %q", pieces, want)
	}
}

func TestStreamDoesNotAllocatePerToken(t *testing.T) {
	b := enginetest.NewBackend("", 0)
	b.ModelInfo.VocabSize = 20000
	b.ModelInfo.ContextLength = 1 << 20
	b.Logits = func(dst []float32, _ []int32, step int) {
		clear(dst)
		dst['a'+step%7] = 30 // a 7-token cycle: no EOS, no loop guard below 56 tokens
	}
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	for _, req := range []engine.Request{
		{Prompt: "x", MaxTokens: 5000},
		{Prompt: "x", MaxTokens: 5000, Stop: []string{"zzz", "abq"}, Temperature: 0.7, TopP: 0.9, RepetitionPenalty: 1.1},
		{Prompt: "x", MaxTokens: 5000, Logprobs: true},
		{Prompt: "x", MaxTokens: 5000, Logprobs: true, TopLogprobs: engine.MaxTopLogprobs, Temperature: 0.7},
	} {
		s, err := e.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 { // warm up the buffers
			s.Next()
		}
		if n := testing.AllocsPerRun(30, func() { s.Next() }); n != 0 {
			t.Errorf("%v allocations per token for %+v", n, req)
		}
		s.Close()
	}
}

func TestReserveGrowsWithoutMaxTokens(t *testing.T) {
	b := cycling("abcdefg")
	b.ModelInfo.ContextLength = 4000
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	s, err := e.Stream(context.Background(), engine.Request{Prompt: "0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := b.Stats().Reserved; got != 10+512 {
		t.Fatalf("first reservation %d, want prompt + 512", got)
	}
	for range 600 {
		if !s.Next() {
			t.Fatal(s.Err())
		}
	}
	if st := b.Stats(); st.Reserved != 2*522 || st.Reserves != 2 {
		t.Errorf("after 600 tokens: %d reservations, last %d; want 2, the last doubling to %d", st.Reserves, st.Reserved, 2*522)
	}
	for s.Next() {
	}
	if res := s.Result(); res.Usage.CompletionTokens != 3990 || b.Stats().Reserved != 4000 || res.FinishReason != engine.FinishLength {
		t.Errorf("%d tokens, reserved %d, finish %q; want the window filled to 4000", res.Usage.CompletionTokens, b.Stats().Reserved, res.FinishReason)
	}
}

// At the end of a stream, text held for a possible stop string comes before
// the decoder's incomplete bytes, in the order the model produced them.
func TestEndFlushKeepsTextOrder(t *testing.T) {
	e := enginetest.NewEngine(t, "xa\xe2\x86")
	text, res, err := e.Generate(context.Background(), engine.Request{Prompt: "p", MaxTokens: 4, Stop: []string{"ab"}})
	if err != nil {
		t.Fatal(err)
	}
	if text != "xa\uFFFD" || res.FinishReason != engine.FinishLength {
		t.Errorf("got %q %q, want %q length", text, res.FinishReason, "xa\uFFFD")
	}
}

// A max_tokens so large that prompt + max_tokens overflows int is clamped to
// the window like any other value that does not fit, never wrapped around.
func TestHugeMaxTokensIsClamped(t *testing.T) {
	for _, max := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt / 2} {
		e, b := enginetest.NewEngineBackend(t, enginetest.NewBackend("ok", 64), quiet())
		text, res, err := e.Generate(context.Background(), engine.Request{Prompt: "hello", MaxTokens: max})
		if err != nil {
			t.Fatalf("max_tokens %d: %v", max, err)
		}
		if text != "ok" || !res.MaxTokensClamped || res.MaxTokens != 64-5 || b.Stats().Reserved != 64 {
			t.Errorf("max_tokens %d: text %q, clamped %v to %d, reserved %d; want \"ok\", true, 59, 64",
				max, text, res.MaxTokensClamped, res.MaxTokens, b.Stats().Reserved)
		}
	}
}

// The window's edge: a prompt one token short of the context length leaves
// room for exactly one generated token; a prompt that fills it is refused
// before the backend is asked for anything.
func TestPromptAtTheEdgeOfTheWindow(t *testing.T) {
	const window = 32
	prompt := func(n int) []int32 { return enginetest.ByteTokenizer{}.Encode(strings.Repeat("a", n)) }
	for _, max := range []int{0, 1, 5} {
		e, b := enginetest.NewEngineBackend(t, enginetest.NewBackend("xyz", window), quiet())
		text, res, err := e.Generate(context.Background(), engine.Request{PromptIDs: prompt(window - 1), MaxTokens: max})
		if err != nil {
			t.Fatalf("max_tokens %d: %v", max, err)
		}
		if text != "x" || res.Usage.CompletionTokens != 1 || res.FinishReason != engine.FinishLength || res.MaxTokens != 1 {
			t.Errorf("max_tokens %d: %q, %d tokens, finish %q, limit %d; want \"x\", 1, length, 1",
				max, text, res.Usage.CompletionTokens, res.FinishReason, res.MaxTokens)
		}
		if res.MaxTokensClamped != (max > 1) {
			t.Errorf("max_tokens %d: clamped %v", max, res.MaxTokensClamped)
		}
		if st := b.Stats(); st.Reserved != window || st.Positions != window-1 {
			t.Errorf("max_tokens %d: reserved %d, computed %d positions; want %d and %d", max, st.Reserved, st.Positions, window, window-1)
		}
	}
	e, b := enginetest.NewEngineBackend(t, enginetest.NewBackend("xyz", window), quiet())
	_, err := e.Stream(context.Background(), engine.Request{PromptIDs: prompt(window)})
	var cle *engine.ContextLengthError
	if !errors.As(err, &cle) || cle.PromptTokens != window || cle.ContextLength != window {
		t.Fatalf("full window: %v, want *ContextLengthError for %d of %d", err, window, window)
	}
	if st := b.Stats(); st.Forwards != 0 || st.Reserves != 0 {
		t.Errorf("a refused prompt reached the backend: %+v", st)
	}
}

// Loop-guard settings at the edge of int neither panic nor wrap around: a
// period longer than any generation can hold is simply never found, and a
// repeat count no generation can reach never fires.
func TestLoopGuardExtremeSettings(t *testing.T) {
	for _, g := range []engine.LoopGuard{
		{MaxPeriod: math.MaxInt, MinRepeats: math.MaxInt, MinSpan: 0},
		{MaxPeriod: 4, MinRepeats: math.MaxInt / 2, MinSpan: 0},
		{MaxPeriod: 1 << 40, MinRepeats: 2, MinSpan: math.MaxInt},
	} {
		e, err := engine.New(cycling("ab"), enginetest.ByteTokenizer{}, quiet(), engine.WithLoopGuard(g))
		if err != nil {
			t.Fatalf("%+v: %v", g, err)
		}
		_, res, err := e.Generate(context.Background(), engine.Request{Prompt: "go", MaxTokens: 300})
		e.Close()
		if err != nil || res.LoopGuard || res.Usage.CompletionTokens != 300 {
			t.Errorf("%+v: loop guard %v after %d tokens (%v); want 300 tokens unguarded", g, res.LoopGuard, res.Usage.CompletionTokens, err)
		}
	}
}
