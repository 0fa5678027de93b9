package enginetest

import (
	"context"
	"errors"
	"github.com/prism-local/prism/errcode"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prism-local/prism/engine"
)

// Harness describes an engine under test for RunConformance.
type Harness struct {
	// New builds a fresh engine with the given options. With greedy
	// decoding it must answer Prompt with Script followed by an EOS id,
	// and its context window must be at least 64 tokens.
	New func(t *testing.T, opts ...engine.Option) *engine.Engine
	// Script is the engine's scripted reply; at least 8 bytes, and its
	// second half must not occur in its first (the stop-string case cuts
	// there).
	Script string
	// Prompt is the prompt to send; "" means "Hello".
	Prompt string
	// Looping, if set, builds an engine that answers Prompt greedily with
	// a short text repeated forever (no EOS) and a context window of at
	// least 400 tokens; the loop-guard cases run on it. Nil skips them.
	Looping func(t *testing.T, opts ...engine.Option) *engine.Engine
}

// RunConformance checks the Stream contract every engine must meet: scripted
// greedy output with stop on EOS, max_tokens, stop strings that are never
// emitted, cancellation within one step with the engine left usable, early
// Close, context_length_exceeded before any model work, typed request
// errors, logprobs on every token, seed reproducibility, prefix reuse, chunked prefill, usage
// accounting, speculative decoding giving the tokens of plain decoding
// (or off with a reason) and (with Harness.Looping) the loop guard. The fake in this
// package and the ONNX engine both run it.
func RunConformance(t *testing.T, h Harness) {
	t.Helper()
	if h.Prompt == "" {
		h.Prompt = "Hello"
	}
	if len(h.Script) < 8 {
		t.Fatalf("enginetest: Harness.Script %q is shorter than 8 bytes", h.Script)
	}
	greedy := func() engine.Request { return engine.Request{Prompt: h.Prompt} }

	t.Run("greedy reply then EOS", func(t *testing.T) {
		e := h.New(t)
		s, err := e.Stream(context.Background(), greedy())
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		defer s.Close()
		var text strings.Builder
		var ids []int32
		for s.Next() {
			tok := s.Token()
			if !utf8.Valid(tok.Piece) {
				t.Errorf("piece %q of token %d is not valid UTF-8", tok.Piece, tok.ID)
			}
			text.Write(tok.Piece)
			ids = append(ids, tok.ID)
		}
		if err := s.Err(); err != nil {
			t.Fatalf("Err: %v", err)
		}
		res := s.Result()
		if text.String() != h.Script {
			t.Errorf("text = %q, want %q", text.String(), h.Script)
		}
		if res.FinishReason != engine.FinishStop {
			t.Errorf("finish = %q, want stop", res.FinishReason)
		}
		if last := ids[len(ids)-1]; !slices.Contains(e.Info().EOS, last) {
			t.Errorf("last token %d is not an EOS id %v", last, e.Info().EOS)
		}
		if res.Usage.CompletionTokens != len(ids) {
			t.Errorf("completion tokens = %d, yielded %d", res.Usage.CompletionTokens, len(ids))
		}
		if want := len(e.Tokenizer().Encode(h.Prompt)); res.Usage.PromptTokens != want {
			t.Errorf("prompt tokens = %d, want %d", res.Usage.PromptTokens, want)
		}
		if res.Timings.TimeToFirstToken <= 0 || res.Timings.Prefill <= 0 {
			t.Errorf("timings not measured: %+v", res.Timings)
		}
		if s.Next() {
			t.Error("Next after the end returned true")
		}
	})

	t.Run("max_tokens", func(t *testing.T) {
		e := h.New(t)
		req := greedy()
		req.MaxTokens = 3
		text, res, err := e.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != engine.FinishLength || res.Usage.CompletionTokens != 3 {
			t.Errorf("finish %q after %d tokens, want length after 3", res.FinishReason, res.Usage.CompletionTokens)
		}
		if !strings.HasPrefix(h.Script, text) || text == "" {
			t.Errorf("text %q is not a non-empty prefix of the script", text)
		}
	})

	t.Run("max_tokens clamped to the window", func(t *testing.T) {
		e := h.New(t)
		req := greedy()
		req.MaxTokens = e.Info().ContextLength
		text, res, err := e.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !res.MaxTokensClamped || res.MaxTokens != e.Info().ContextLength-res.Usage.PromptTokens {
			t.Errorf("clamped=%v max=%d, want clamped to %d", res.MaxTokensClamped, res.MaxTokens, e.Info().ContextLength-res.Usage.PromptTokens)
		}
		if text != h.Script {
			t.Errorf("text = %q, want %q", text, h.Script)
		}
	})

	t.Run("stop string across tokens is not emitted", func(t *testing.T) {
		e := h.New(t)
		half := len(h.Script) / 2
		stop := h.Script[half : half+2]
		for !utf8.ValidString(stop) && half+len(stop) < len(h.Script) {
			stop = h.Script[half : half+len(stop)+1]
		}
		req := greedy()
		req.Stop = []string{"never in the script \x01", stop}
		s, err := e.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var text strings.Builder
		for s.Next() {
			text.Write(s.Token().Piece)
		}
		res := s.Result()
		want := h.Script[:strings.Index(h.Script, stop)]
		if text.String() != want || res.FinishReason != engine.FinishStop || res.StopString != stop {
			t.Errorf("got %q finish %q stop %q, want %q finish stop stop %q", text.String(), res.FinishReason, res.StopString, want, stop)
		}
	})

	t.Run("cancel stops within one step and frees the engine", func(t *testing.T) {
		e := h.New(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := e.Stream(ctx, greedy())
		if err != nil {
			t.Fatal(err)
		}
		if !s.Next() {
			t.Fatalf("no first token: %v", s.Err())
		}
		cancel()
		if s.Next() {
			t.Error("Next after cancel returned a token")
		}
		if !errors.Is(s.Err(), context.Canceled) || s.Result().FinishReason != engine.FinishCancelled {
			t.Errorf("err %v finish %q, want context.Canceled and cancelled", s.Err(), s.Result().FinishReason)
		}
		text, _, err := e.Generate(context.Background(), greedy())
		if err != nil || text != h.Script {
			t.Errorf("after cancel: %q, %v; want the script", text, err)
		}
	})

	t.Run("cancelled before start", func(t *testing.T) {
		e := h.New(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Stream(ctx, greedy()); !errors.Is(err, context.Canceled) {
			t.Errorf("Stream with a cancelled context: %v, want context.Canceled", err)
		}
	})

	t.Run("close early frees the engine", func(t *testing.T) {
		e := h.New(t)
		s, err := e.Stream(context.Background(), greedy())
		if err != nil {
			t.Fatal(err)
		}
		s.Next()
		s.Close()
		if s.Result().FinishReason != engine.FinishCancelled || s.Err() != nil {
			t.Errorf("after Close: finish %q err %v, want cancelled and nil", s.Result().FinishReason, s.Err())
		}
		text, _, err := e.Generate(context.Background(), greedy())
		if err != nil || text != h.Script {
			t.Errorf("after Close: %q, %v; want the script", text, err)
		}
	})

	t.Run("context length exceeded before model work", func(t *testing.T) {
		e := h.New(t)
		long := make([]int32, e.Info().ContextLength)
		for i := range long {
			long[i] = e.Tokenizer().Encode("a")[0]
		}
		_, err := e.Stream(context.Background(), engine.Request{PromptIDs: long})
		var cle *engine.ContextLengthError
		if !errors.As(err, &cle) || errcode.Of(err) != "context_length_exceeded" || cle.PromptTokens != len(long) {
			t.Errorf("err = %v, want *ContextLengthError with code context_length_exceeded", err)
		}
	})

	t.Run("invalid parameters are typed errors", func(t *testing.T) {
		e := h.New(t)
		for _, c := range []struct {
			param string
			req   engine.Request
		}{
			{"temperature", engine.Request{Prompt: h.Prompt, Temperature: -1}},
			{"top_p", engine.Request{Prompt: h.Prompt, TopP: 1.5}},
			{"top_k", engine.Request{Prompt: h.Prompt, TopK: -2}},
			{"min_p", engine.Request{Prompt: h.Prompt, MinP: 2}},
			{"repetition_penalty", engine.Request{Prompt: h.Prompt, RepetitionPenalty: -1}},
			{"frequency_penalty", engine.Request{Prompt: h.Prompt, FrequencyPenalty: 3}},
			{"presence_penalty", engine.Request{Prompt: h.Prompt, PresencePenalty: -3}},
			{"max_tokens", engine.Request{Prompt: h.Prompt, MaxTokens: -1}},
			{"stop", engine.Request{Prompt: h.Prompt, Stop: []string{""}}},
			{"top_logprobs", engine.Request{Prompt: h.Prompt, Logprobs: true, TopLogprobs: engine.MaxTopLogprobs + 1}},
			{"top_logprobs", engine.Request{Prompt: h.Prompt, TopLogprobs: 1}},
			{"prompt", engine.Request{}},
		} {
			_, err := e.Stream(context.Background(), c.req)
			var ire *engine.InvalidRequestError
			if !errors.As(err, &ire) || ire.Param != c.param || errcode.Of(err) != "invalid_request_error" {
				t.Errorf("%s: err = %v, want *InvalidRequestError for %s", c.param, err, c.param)
			}
		}
	})

	t.Run("logprobs of every token", func(t *testing.T) {
		e := h.New(t)
		req := greedy()
		req.Logprobs, req.TopLogprobs = true, 3
		s, err := e.Stream(context.Background(), req)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		defer s.Close()
		var text strings.Builder
		n := 0
		for s.Next() {
			tok := s.Token()
			text.Write(tok.Piece)
			n++
			top := tok.TopLogprobs
			switch {
			case !(tok.Logprob <= 0):
				t.Errorf("token %d: logprob %v is not a log-probability", tok.ID, tok.Logprob)
			case len(top) != 3:
				t.Errorf("token %d: %d alternatives, want 3", tok.ID, len(top))
			case top[0].ID != tok.ID || top[0].Logprob != tok.Logprob:
				// Greedy: the generated token is the most likely one.
				t.Errorf("greedy token %d (%v) is not the first alternative %+v", tok.ID, tok.Logprob, top)
			case top[1].Logprob > top[0].Logprob || top[2].Logprob > top[1].Logprob:
				t.Errorf("token %d: alternatives out of order %+v", tok.ID, top)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("Err: %v", err)
		}
		if text.String() != h.Script || n != s.Result().Usage.CompletionTokens {
			t.Errorf("with logprobs: %q in %d tokens (%d counted), want %q", text.String(), n, s.Result().Usage.CompletionTokens, h.Script)
		}
	})

	t.Run("same seed same tokens", func(t *testing.T) {
		e := h.New(t)
		seed := int64(42)
		req := engine.Request{Prompt: h.Prompt, Temperature: 1.5, TopK: 40, TopP: 0.95, Seed: &seed, MaxTokens: 12}
		run := func() []int32 {
			s, err := e.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var ids []int32
			for s.Next() {
				ids = append(ids, s.Token().ID)
			}
			if err := s.Err(); err != nil {
				t.Fatalf("sampled stream: %v", err)
			}
			return ids
		}
		a, b := run(), run()
		if len(a) == 0 {
			t.Fatal("a sampled stream yielded no tokens")
		}
		if !slices.Equal(a, b) {
			t.Errorf("seed 42 gave %v then %v", a, b)
		}
	})

	t.Run("prefix reuse", func(t *testing.T) {
		e := h.New(t)
		first, _, err := e.Generate(context.Background(), greedy())
		if err != nil {
			t.Fatal(err)
		}
		next := engine.Request{Prompt: h.Prompt + first + h.Prompt}
		text, res, err := e.Generate(context.Background(), next)
		if err != nil {
			t.Fatal(err)
		}
		if res.Usage.CachedTokens < len(e.Tokenizer().Encode(h.Prompt))-1 || res.Usage.CachedTokens >= res.Usage.PromptTokens {
			t.Errorf("cached tokens = %d of %d, want the first turn reused", res.Usage.CachedTokens, res.Usage.PromptTokens)
		}
		if text != h.Script {
			t.Errorf("text with a reused prefix = %q, want %q", text, h.Script)
		}
		_, res, _ = e.Generate(context.Background(), next)
		if res.Usage.CachedTokens != res.Usage.PromptTokens-1 {
			t.Errorf("same prompt again: cached %d of %d, want all but the last", res.Usage.CachedTokens, res.Usage.PromptTokens)
		}
	})

	t.Run("chunked prefill", func(t *testing.T) {
		e := h.New(t, engine.WithPrefillChunk(3))
		prompt := strings.Repeat(h.Prompt+" ", 4)
		text, res, err := e.Generate(context.Background(), engine.Request{Prompt: prompt})
		if err != nil {
			t.Fatal(err)
		}
		if text != h.Script || res.Usage.CachedTokens != 0 {
			t.Errorf("chunked prefill gave %q (cached %d), want %q", text, res.Usage.CachedTokens, h.Script)
		}
	})

	t.Run("prompt as ids", func(t *testing.T) {
		e := h.New(t)
		text, res, err := e.Generate(context.Background(), engine.Request{PromptIDs: e.Tokenizer().Encode(h.Prompt)})
		if err != nil || text != h.Script || res.FinishReason != engine.FinishStop {
			t.Errorf("got %q %q %v, want the script", text, res.FinishReason, err)
		}
	})

	t.Run("loop guard", func(t *testing.T) {
		if h.Looping == nil {
			t.Skip("Harness.Looping not set")
		}
		e := h.Looping(t)
		_, res, err := e.Generate(context.Background(), engine.Request{Prompt: h.Prompt, MaxTokens: 350})
		if err != nil {
			t.Fatal(err)
		}
		if !res.LoopGuard || res.FinishReason != engine.FinishLength || res.Usage.CompletionTokens >= 350 {
			t.Errorf("looping reply: loop guard %v, finish %q after %d tokens; want the guard to stop it early with length",
				res.LoopGuard, res.FinishReason, res.Usage.CompletionTokens)
		}
		off := h.Looping(t, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
		_, res, err = off.Generate(context.Background(), engine.Request{Prompt: h.Prompt, MaxTokens: 350})
		if err != nil {
			t.Fatal(err)
		}
		if res.LoopGuard || res.Usage.CompletionTokens != 350 {
			t.Errorf("guard off: loop guard %v after %d tokens; want 350 tokens", res.LoopGuard, res.Usage.CompletionTokens)
		}
	})

	t.Run("speculation gives the tokens of plain decoding", func(t *testing.T) {
		e := h.New(t)
		// The script inside the prompt gives the drafter something to
		// copy.
		prompt := h.Prompt + " " + h.Script + " " + h.Prompt
		run := func(off bool) ([]int32, engine.Result) {
			s, err := e.Stream(context.Background(), engine.Request{Prompt: prompt, NoSpeculation: off, Logprobs: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var ids []int32
			for s.Next() {
				ids = append(ids, s.Token().ID)
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			return ids, s.Result()
		}
		spec, sres := run(false)
		plain, pres := run(true)
		if !slices.Equal(spec, plain) || sres.FinishReason != pres.FinishReason {
			t.Errorf("speculative %v (%s), plain %v (%s)", spec, sres.FinishReason, plain, pres.FinishReason)
		}
		if pres.Speculation != (engine.SpeculationStats{}) {
			t.Errorf("NoSpeculation: %+v, want nothing drafted", pres.Speculation)
		}
		st, info := sres.Speculation, e.Info()
		switch {
		case info.Speculation != engine.SpeculationPromptLookup && st != (engine.SpeculationStats{}):
			t.Errorf("speculation %q (%s) but %+v", info.Speculation, info.SpeculationReason, st)
		case info.Speculation == engine.SpeculationPromptLookup && (st.Accepted == 0 || st.Accepted > st.Drafted):
			t.Errorf("speculation on, copying the script from the prompt: %+v", st)
		case info.Speculation != engine.SpeculationPromptLookup && (info.Speculation != engine.SpeculationOff || info.SpeculationReason == ""):
			t.Errorf("speculation %q with reason %q, want on, or off with a reason", info.Speculation, info.SpeculationReason)
		}
	})

	t.Run("closed engine", func(t *testing.T) {
		e := h.New(t)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Stream(context.Background(), greedy()); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Stream after Close: %v, want ErrClosed", err)
		}
	})
}
