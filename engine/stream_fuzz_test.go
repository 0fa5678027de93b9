package engine_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// FuzzStream checks the whole token path — streaming decode, stop strings,
// max_tokens, flushing — against a reference computed on the complete text:
// the pieces of a stream must concatenate to the decoded reply, cut at
// max_tokens and before the first stop string, each piece valid UTF-8.
func FuzzStream(f *testing.F) {
	f.Add("Hello, world!", "wor", 0)
	f.Add("héllo → wörld", "→", 5)
	f.Add("xa\xe2\x86", "ab", 4)
	f.Add("aaaaab", "aab", 0)
	f.Add("\xff\xfeabc", "c", 3)
	f.Fuzz(func(t *testing.T, reply, stop string, maxTokens int) {
		if len(reply) == 0 || len(reply) > 200 || maxTokens < 0 || maxTokens > 300 {
			return
		}
		req := engine.Request{Prompt: "p", MaxTokens: maxTokens}
		if stop != "" {
			if !utf8.ValidString(stop) {
				return
			}
			req.Stop = []string{stop}
		}
		e, err := enginetest.New(reply, engine.WithLoopGuard(engine.LoopGuard{Off: true}))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		s, err := e.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		n := 0
		for s.Next() {
			if !utf8.Valid(s.Token().Piece) {
				t.Fatalf("piece %q is not valid UTF-8", s.Token().Piece)
			}
			got.Write(s.Token().Piece)
			n++
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}

		// Reference: the tokens the model produces, cut at max_tokens.
		ids := enginetest.ByteTokenizer{}.Encode(reply)
		limit := len(ids)
		if maxTokens > 0 {
			limit = min(limit, maxTokens)
		}
		dec := enginetest.ByteTokenizer{}.NewStreamDecoder(true)
		var all []byte
		for _, id := range ids[:limit] {
			all = dec.Append(all, id)
		}
		all = dec.Flush(all)
		want, stopped := string(all), false
		if stop != "" {
			if i := strings.Index(want, stop); i >= 0 {
				want, stopped = want[:i], true
			}
		}
		res := s.Result()
		if got.String() != want {
			t.Fatalf("reply %q stop %q max %d: got %q, want %q", reply, stop, maxTokens, got.String(), want)
		}
		if stopped != (res.StopString != "") || res.Usage.CompletionTokens != n {
			t.Fatalf("stopped=%v result %+v after %d tokens", stopped, res, n)
		}
		if !stopped && maxTokens > 0 && maxTokens <= len(ids) && res.FinishReason != engine.FinishLength {
			t.Fatalf("finish %q, want length", res.FinishReason)
		}
	})
}
