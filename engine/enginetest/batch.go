package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/prism-local/prism/engine"
)

// BatchHarness describes an engine that decodes in batches, for
// RunBatchConformance.
type BatchHarness struct {
	// New builds a fresh engine with the given options. Given
	// engine.WithMaxBatch(8) it must decode in batches (ModelInfo.Batch
	// BatchContinuous, MaxBatch 2 or more), and greedy decoding must end
	// every prompt of Prompts within 48 tokens or go on to MaxTokens; its
	// context window must be at least 128 tokens.
	New func(t *testing.T, opts ...engine.Option) *engine.Engine
	// Prompts are at least 8 different prompts, short enough to leave 64
	// positions in the window; nil uses eight built-in ones.
	Prompts []string
	// Constraint, if set, returns a constraint for e's vocabulary that
	// greedy decoding can satisfy; the cases with constrained requests
	// use it. Nil skips them.
	Constraint func(e *engine.Engine) engine.Constraint
	// MaxDecodeBatch, if set, reports the most sequences one batched
	// decode step of e's backend has run so far; the suite then checks
	// that concurrent streams really were decoded together. Nil skips
	// that check.
	MaxDecodeBatch func(e *engine.Engine) int
}

// outcome is what a request produced, compared between runs.
type outcome struct {
	ids      []int32
	text     string
	logprobs []float32
	finish   engine.FinishReason
	stop     string
	err      error
}

func (o outcome) String() string {
	return fmt.Sprintf("%q (%d tokens, finish %q, stop %q, err %v)", o.text, len(o.ids), o.finish, o.stop, o.err)
}

// same reports whether a and b are the same generation; logprobs may
// differ by rounding.
func (a outcome) same(b outcome) bool {
	if !slices.Equal(a.ids, b.ids) || a.text != b.text || a.finish != b.finish || a.stop != b.stop ||
		(a.err == nil) != (b.err == nil) || len(a.logprobs) != len(b.logprobs) {
		return false
	}
	for i := range a.logprobs {
		if math.Abs(float64(a.logprobs[i]-b.logprobs[i])) > 1e-3 {
			return false
		}
	}
	return true
}

// drain reads s to its end.
func drain(s *engine.Stream) outcome {
	var o outcome
	var text []byte
	for s.Next() {
		tok := s.Token()
		o.ids = append(o.ids, tok.ID)
		text = append(text, tok.Piece...)
		if tok.TopLogprobs != nil {
			o.logprobs = append(o.logprobs, tok.Logprob)
		}
	}
	res := s.Result()
	o.text, o.finish, o.stop, o.err = string(text), res.FinishReason, res.StopString, s.Err()
	_ = s.Close()
	return o
}

// run streams req on e to its end.
func run(e *engine.Engine, req engine.Request) outcome {
	s, err := e.Stream(context.Background(), req)
	if err != nil {
		return outcome{err: err}
	}
	return drain(s)
}

// RunBatchConformance checks the contract of an engine that decodes
// concurrent streams in batches (engine.WithMaxBatch): every greedy
// request gives exactly what it gives alone, with 1, 2, 4 and 8 requests
// at once of different prompts and lengths, with stop strings, logprobs
// and (Harness.Constraint) constraints; a cancelled stream frees its slot
// and the others finish unchanged; a request arriving while others decode
// is admitted and answered before they end; concurrent streams are
// decoded together (Harness.MaxDecodeBatch); speculation is reported off;
// Close waits for the streams still open. Run it with -race, and with a
// goroutine leak check in TestMain.
func RunBatchConformance(t *testing.T, h BatchHarness) {
	t.Helper()
	if h.Prompts == nil {
		h.Prompts = []string{"Hello", "The sky", "Once upon a time", "ab", "Prism runs models", "x", "Why?", "1, 2, 3,"}
	}
	if len(h.Prompts) < 8 {
		t.Fatalf("enginetest: BatchHarness.Prompts has %d prompts, want at least 8", len(h.Prompts))
	}
	newEngine := func(t *testing.T) *engine.Engine {
		e := h.New(t, engine.WithMaxBatch(8))
		if info := e.Info(); info.Batch != engine.BatchContinuous || info.MaxBatch < 2 {
			t.Fatalf("enginetest: WithMaxBatch(8) gives batch %q, max %d (%s); want continuous", info.Batch, info.MaxBatch, info.BatchReason)
		}
		return e
	}
	// requests are eight requests of different prompts and lengths; some
	// stop on a string, ask for logprobs or are constrained.
	requests := func(e *engine.Engine) []engine.Request {
		var c engine.Constraint
		if h.Constraint != nil {
			c = h.Constraint(e)
		}
		reqs := make([]engine.Request, 8)
		for i := range reqs {
			r := engine.Request{Prompt: h.Prompts[i], MaxTokens: 6 + 5*i}
			switch i % 4 {
			case 1:
				r.Logprobs, r.TopLogprobs = true, 2
			case 2:
				r.Constraint = c
			case 3:
				r.Stop = []string{"e", "o "}
			}
			reqs[i] = r
		}
		return reqs
	}

	t.Run("info", func(t *testing.T) {
		e := newEngine(t)
		info := e.Info()
		if info.MaxBatch > 8 || info.BatchReason == "" {
			t.Errorf("WithMaxBatch(8): max batch %d, reason %q; want at most 8 and a reason", info.MaxBatch, info.BatchReason)
		}
		if info.Speculation != engine.SpeculationOff || info.SpeculationReason == "" {
			t.Errorf("speculation %q (%q) while batching, want off with a reason", info.Speculation, info.SpeculationReason)
		}
		serial := h.New(t, engine.WithMaxBatch(1)).Info()
		if serial.Batch != engine.BatchSerial || serial.MaxBatch != 1 || serial.BatchReason == "" {
			t.Errorf("WithMaxBatch(1): batch %q max %d reason %q, want serial, 1 and a reason", serial.Batch, serial.MaxBatch, serial.BatchReason)
		}
	})

	t.Run("batched gives what alone gives", func(t *testing.T) {
		e := newEngine(t)
		reqs := requests(e)
		alone := make([]outcome, len(reqs))
		for i, r := range reqs {
			alone[i] = run(e, r)
			if alone[i].err != nil || len(alone[i].ids) == 0 {
				t.Fatalf("request %d alone: %v", i, alone[i])
			}
		}
		for _, n := range []int{1, 2, 4, 8} {
			got := make([]outcome, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { got[i] = run(e, reqs[i]) })
			}
			wg.Wait()
			for i := range n {
				if !got[i].same(alone[i]) {
					t.Errorf("%d at once, request %d: %v; alone %v", n, i, got[i], alone[i])
				}
			}
		}
		// Every stream opened (prefilled and admitted) before any is
		// read: each decode step then waits for all of them, so the
		// steps are batched however the goroutines are scheduled.
		open := make([]*engine.Stream, min(len(reqs), e.Info().MaxBatch))
		for i, r := range reqs[:len(open)] {
			s, err := e.Stream(context.Background(), r)
			if err != nil {
				t.Fatalf("open request %d: %v", i, err)
			}
			open[i] = s
		}
		got := make([]outcome, len(open))
		var wg sync.WaitGroup
		for i, s := range open {
			wg.Go(func() { got[i] = drain(s) })
		}
		wg.Wait()
		for i := range open {
			if !got[i].same(alone[i]) {
				t.Errorf("opened together, request %d: %v; alone %v", i, got[i], alone[i])
			}
		}
		if h.MaxDecodeBatch != nil {
			if m := h.MaxDecodeBatch(e); m < 2 {
				t.Errorf("the most sequences one decode step ran is %d; concurrent streams were not batched", m)
			}
		}
	})

	t.Run("a cancelled stream frees its slot", func(t *testing.T) {
		e := newEngine(t)
		reqs := requests(e)
		long := engine.Request{Prompt: h.Prompts[0], MaxTokens: 64}
		want := []outcome{run(e, reqs[1]), run(e, reqs[3])}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		victim, err := e.Stream(ctx, long)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]outcome, 2)
		var wg sync.WaitGroup
		for i, r := range []engine.Request{reqs[1], reqs[3]} {
			wg.Go(func() { got[i] = run(e, r) })
		}
		if !victim.Next() {
			t.Fatalf("no first token: %v", victim.Err())
		}
		cancel()
		if victim.Next() {
			t.Error("Next after cancel returned a token")
		}
		if !errors.Is(victim.Err(), context.Canceled) || victim.Result().FinishReason != engine.FinishCancelled {
			t.Errorf("cancelled stream: err %v finish %q, want context.Canceled and cancelled", victim.Err(), victim.Result().FinishReason)
		}
		wg.Wait()
		for i := range got {
			if !got[i].same(want[i]) {
				t.Errorf("beside a cancelled stream: %v, alone %v", got[i], want[i])
			}
		}
		// Every slot is free again: as many streams as slots open at once.
		n := e.Info().MaxBatch
		streams := make([]*engine.Stream, n)
		for i := range streams {
			if streams[i], err = e.Stream(context.Background(), reqs[i%len(reqs)]); err != nil {
				t.Fatalf("stream %d of %d after the cancel: %v", i+1, n, err)
			}
		}
		for i, s := range streams {
			if o := drain(s); o.err != nil {
				t.Errorf("stream %d after the cancel: %v", i, o)
			}
		}
	})

	t.Run("a new request is admitted while others decode", func(t *testing.T) {
		e := newEngine(t)
		long := engine.Request{Prompt: h.Prompts[0], MaxTokens: 64}
		late := engine.Request{Prompt: h.Prompts[5], MaxTokens: 12, Logprobs: true}
		wantLong, wantLate := run(e, long), run(e, late)
		s, err := e.Stream(context.Background(), long)
		if err != nil {
			t.Fatal(err)
		}
		var first outcome
		for range 3 {
			if s.Next() {
				first.ids = append(first.ids, s.Token().ID)
			}
		}
		// The long stream is open and part way; the late one must be
		// admitted and answered before it goes on.
		if got := run(e, late); !got.same(wantLate) {
			t.Errorf("admitted while another decodes: %v, alone %v", got, wantLate)
		}
		rest := drain(s)
		rest.ids = append(first.ids, rest.ids...)
		if !slices.Equal(rest.ids, wantLong.ids) || rest.finish != wantLong.finish {
			t.Errorf("the stream decoding meanwhile: %v, alone %v", rest.ids, wantLong.ids)
		}
	})

	t.Run("close waits for open streams", func(t *testing.T) {
		e := newEngine(t)
		reqs := requests(e)
		want := []outcome{run(e, reqs[0]), run(e, reqs[4])}
		var streams []*engine.Stream
		for _, r := range []engine.Request{reqs[0], reqs[4]} {
			s, err := e.Stream(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, s)
		}
		closed := make(chan error, 1)
		go func() { closed <- e.Close() }()
		for i, s := range streams {
			if got := drain(s); !got.same(want[i]) {
				t.Errorf("stream open during Close: %v, want %v", got, want[i])
			}
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := e.Stream(context.Background(), reqs[0]); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Stream after Close: %v, want ErrClosed", err)
		}
	})
}
