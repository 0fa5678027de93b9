package engine_test

import (
	"context"
	"errors"
	"github.com/prism-local/prism/errcode"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// A backend that reports PrefillWhole gets every prompt in one Forward from
// position 0, never a reused prefix; a prompt longer than the prefill chunk
// is refused before any model work with a ContextLengthError saying why;
// and the same backend without it gets chunks and prefix reuse.
func TestWholePrefill(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		prefill string
		whole   bool
	}{{engine.PrefillWhole, true}, {engine.PrefillChunked, false}, {"", false}} {
		t.Run("prefill="+tc.prefill, func(t *testing.T) {
			b := enginetest.NewBackend("ok", 0)
			b.ModelInfo.Prefill, b.ModelInfo.PrefillReason = tc.prefill, "a 2-token step on a past of 5 positions fails"
			e, _ := enginetest.NewEngineBackend(t, b, engine.WithPrefillChunk(32))
			first := strings.Repeat("a", 12)
			_, res, err := e.Generate(ctx, engine.Request{Prompt: first})
			if err != nil {
				t.Fatal(err)
			}
			second := first + "ok and then"
			forwards := b.Stats().Forwards
			_, res, err = e.Generate(ctx, engine.Request{Prompt: second})
			if err != nil {
				t.Fatal(err)
			}
			if reused := res.Usage.CachedTokens; tc.whole && reused != 0 || !tc.whole && reused == 0 {
				t.Fatalf("reused %d cached tokens", reused)
			}
			if tc.whole && b.Stats().MaxChunk != len(second) {
				t.Fatalf("largest prefill step %d, want the whole prompt of %d", b.Stats().MaxChunk, len(second))
			}
			_, _, err = e.Generate(ctx, engine.Request{Prompt: strings.Repeat("b", 40)})
			var cle *engine.ContextLengthError
			switch {
			case tc.whole && (!errors.As(err, &cle) || cle.MaxPrompt != 32 || !strings.Contains(err.Error(), "fails") || errcode.Of(err) != engine.CodeContextLengthExceeded):
				t.Fatalf("a prompt over the chunk: %v", err)
			case !tc.whole && err != nil:
				t.Fatalf("a prompt in chunks: %v", err)
			}
			if tc.whole && b.Stats().Forwards == forwards {
				t.Fatal("no step ran for the second request")
			}
		})
	}
}
