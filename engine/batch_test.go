package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// plainBackend hides the fake's Batcher methods: a backend that is no
// engine.Batcher.
type plainBackend struct{ b *enginetest.Backend }

func (p plainBackend) Info() engine.ModelInfo { return p.b.Info() }
func (p plainBackend) Reserve(n int) error    { return p.b.Reserve(n) }
func (p plainBackend) Close() error           { return p.b.Close() }
func (p plainBackend) Forward(ctx context.Context, ids []int32, pos int) ([]float32, error) {
	return p.b.Forward(ctx, ids, pos)
}

func TestBatchInfo(t *testing.T) {
	batcher := func(maxBatch int) *enginetest.Backend {
		b := enginetest.NewBackend("hi", 0)
		b.MaxBatch = maxBatch
		return b
	}
	unproven := batcher(4)
	unproven.ModelInfo.Batch, unproven.ModelInfo.BatchReason = engine.BatchSerial, "the graph has no batch axis"
	for _, c := range []struct {
		name    string
		backend engine.Backend
		opts    []engine.Option
		batch   string
		max     int
		reason  string
		spec    string
	}{
		{"default", batcher(4), nil, engine.BatchSerial, 1, "WithMaxBatch(1)", engine.SpeculationPromptLookup},
		{"no Batcher", plainBackend{batcher(4)}, []engine.Option{engine.WithMaxBatch(4)}, engine.BatchSerial, 1, "no engine.Batcher", engine.SpeculationOff},
		{"backend says nothing", batcher(0), []engine.Option{engine.WithMaxBatch(4)}, engine.BatchSerial, 1, "has not proven", engine.SpeculationPromptLookup},
		{"backend's reason", unproven, []engine.Option{engine.WithMaxBatch(4)}, engine.BatchSerial, 1, "no batch axis", engine.SpeculationPromptLookup},
		{"fewer than the backend", batcher(8), []engine.Option{engine.WithMaxBatch(3)}, engine.BatchContinuous, 3, "computes each slot's row alone", engine.SpeculationOff},
		{"capped by the backend", batcher(4), []engine.Option{engine.WithMaxBatch(16)}, engine.BatchContinuous, 4, "computes each slot's row alone", engine.SpeculationOff},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := engine.New(c.backend, enginetest.ByteTokenizer{}, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			info := e.Info()
			if info.Batch != c.batch || info.MaxBatch != c.max || !strings.Contains(info.BatchReason, c.reason) {
				t.Errorf("batch %q max %d reason %q; want %q, %d and a reason saying %q", info.Batch, info.MaxBatch, info.BatchReason, c.batch, c.max, c.reason)
			}
			if info.Speculation != c.spec {
				t.Errorf("speculation %q (%s), want %q", info.Speculation, info.SpeculationReason, c.spec)
			}
			if c.batch == engine.BatchContinuous && !strings.Contains(info.SpeculationReason, "batching") {
				t.Errorf("speculation reason %q, want it to name batching", info.SpeculationReason)
			}
		})
	}
}

// TestBatchedMatchesSerial runs the same requests on a serial engine, one
// after another, and on a batching one, all at once: the tokens and
// logprobs are the same.
func TestBatchedMatchesSerial(t *testing.T) {
	newBackend := func(maxBatch int) *enginetest.Backend {
		b := copier(40)
		b.MaxBatch = maxBatch
		return b
	}
	serial, _ := enginetest.NewEngineBackend(t, newBackend(0))
	batched, bb := enginetest.NewEngineBackend(t, newBackend(4), engine.WithMaxBatch(4), engine.WithPrefillChunk(7))
	seed := int64(3)
	reqs := []engine.Request{
		{Prompt: copyPrompt, MaxTokens: 30},
		{Prompt: "the quick brown", MaxTokens: 12, Logprobs: true, TopLogprobs: 3},
		{Prompt: "go", MaxTokens: 25, Constraint: lettersThenEnd{min: 5, max: 12}},
		{Prompt: "lazy dog", Stop: []string{"o"}},
		{Prompt: copyPrompt, MaxTokens: 20, Temperature: 0.8, Seed: &seed},
		{Prompt: "x", MaxTokens: 3},
	}
	want := make([]specRun, len(reqs))
	for i, r := range reqs {
		r.NoSpeculation = true
		want[i] = runSpec(t, serial, r)
	}
	got := make([]specRun, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { got[i] = runSpec(t, batched, r) })
	}
	wg.Wait()
	for i := range reqs {
		if !slices.Equal(got[i].ids, want[i].ids) || !slices.Equal(got[i].lps, want[i].lps) || got[i].text != want[i].text ||
			got[i].res.FinishReason != want[i].res.FinishReason {
			t.Errorf("request %d batched: %q %v (%s), serial %q %v (%s)", i, got[i].text, got[i].ids, got[i].res.FinishReason, want[i].text, want[i].ids, want[i].res.FinishReason)
		}
	}
	if err := batched.Close(); err != nil { // waits for the last slots to be dropped
		t.Fatal(err)
	}
	if st := bb.Stats(); st.Admits != len(reqs) || st.Drops != len(reqs) || st.MaxDecodeBatch > 4 {
		t.Errorf("batcher calls %+v; want %d admits and drops", st, len(reqs))
	}
}

func TestBatchedDecodeError(t *testing.T) {
	boom := errors.New("device lost")
	b := enginetest.NewBackend("a reply long enough", 0)
	b.MaxBatch = 4
	var fail atomic.Bool
	b.DecodeHook = func(_ context.Context, slots []int, _ []int32) error {
		if fail.Load() {
			return boom
		}
		return nil
	}
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithMaxBatch(4))
	var streams []*engine.Stream
	for _, p := range []string{"a", "bb", "ccc"} {
		s, err := e.Stream(context.Background(), engine.Request{Prompt: p})
		if err != nil {
			t.Fatal(err)
		}
		if !s.Next() { // from the prefill's logits: no decode yet
			t.Fatalf("no first token: %v", s.Err())
		}
		streams = append(streams, s)
	}
	fail.Store(true)
	for i, s := range streams {
		if s.Next() {
			t.Errorf("stream %d: a token from a failed decode step", i)
		}
		if !errors.Is(s.Err(), boom) || s.Result().FinishReason != engine.FinishCancelled {
			t.Errorf("stream %d: err %v finish %q, want the backend's error and cancelled", i, s.Err(), s.Result().FinishReason)
		}
	}
	fail.Store(false)
	text, _, err := e.Generate(context.Background(), engine.Request{Prompt: "again"})
	if err != nil || text != "a reply long enough" {
		t.Errorf("after a failed step: %q, %v", text, err)
	}
}

func TestBatchedPrefixReuse(t *testing.T) {
	b := enginetest.NewBackend("reply", 0)
	b.MaxBatch = 2
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithMaxBatch(2))
	_, res, err := e.Generate(context.Background(), engine.Request{Prompt: "shared prefix, then A"})
	if err != nil || res.Usage.CachedTokens != 0 {
		t.Fatalf("first: cached %d, %v", res.Usage.CachedTokens, err)
	}
	text, res, err := e.Generate(context.Background(), engine.Request{Prompt: "shared prefix, then B"})
	if err != nil || text != "reply" || res.Usage.CachedTokens != len("shared prefix, then ") {
		t.Errorf("second: %q cached %d, %v; want the shared prefix reused", text, res.Usage.CachedTokens, err)
	}
}

func TestBatchedStreamWaitsForASlot(t *testing.T) {
	b := enginetest.NewBackend("two at a time", 0)
	b.MaxBatch = 2
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithMaxBatch(2))
	var open []*engine.Stream
	for _, p := range []string{"a", "b"} {
		s, err := e.Stream(context.Background(), engine.Request{Prompt: p})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := e.Stream(ctx, engine.Request{Prompt: "c"})
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("third stream with both slots taken: %v, want to wait and see its context cancelled", err)
	}
	done := make(chan string, 1)
	go func() {
		text, _, _ := e.Generate(context.Background(), engine.Request{Prompt: "d"})
		done <- text
	}()
	open[0].Close()
	if text := <-done; text != "two at a time" {
		t.Errorf("stream after a slot was freed: %q", text)
	}
	for open[1].Next() {
	}
}

func TestBatchedStreamDoesNotAllocatePerToken(t *testing.T) {
	b := enginetest.NewBackend("", 0)
	b.MaxBatch = 2
	b.ModelInfo.ContextLength = 1 << 16
	b.Logits = func(dst []float32, _ []int32, step int) {
		clear(dst)
		dst['a'+step%7] = 30
	}
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithMaxBatch(2), engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	s, err := e.Stream(context.Background(), engine.Request{Prompt: "x", MaxTokens: 5000, Logprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 20 { // warm up the buffers
		s.Next()
	}
	if n := testing.AllocsPerRun(30, func() { s.Next() }); n != 0 {
		t.Errorf("%v allocations per batched token", n)
	}
}

// Batching, the Forward cache holds only the prompt: the answer is decoded
// in the slot, which the Batcher grows, so a request without max_tokens
// runs past the first reservation without another Reserve.
func TestBatchedForwardCacheHoldsOnlyThePrompt(t *testing.T) {
	b := enginetest.NewBackend("", 0)
	b.MaxBatch = 2
	b.Logits = func(dst []float32, _ []int32, step int) {
		clear(dst)
		dst['a'+step%7] = 30
		if step == 700 {
			dst[enginetest.EOS] = 40
		}
	}
	e, _ := enginetest.NewEngineBackend(t, b, engine.WithMaxBatch(2), engine.WithLoopGuard(engine.LoopGuard{Off: true}))
	_, res, err := e.Generate(context.Background(), engine.Request{Prompt: "go"})
	if err != nil || res.Usage.CompletionTokens != 701 || res.FinishReason != engine.FinishStop {
		t.Fatalf("%d tokens, finish %q, %v; want 701 and stop", res.Usage.CompletionTokens, res.FinishReason, err)
	}
	if st := b.Stats(); st.Reserved != 2 || st.Reserves != 1 {
		t.Errorf("%d reservations, %d positions reserved; want one of the 2-token prompt", st.Reserves, st.Reserved)
	}
}
