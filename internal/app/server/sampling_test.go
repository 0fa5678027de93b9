package server

import (
	"testing"

	"github.com/prism-local/prism/internal/app/wire"
)

// TestEngineRequestTemperature: an omitted temperature leaves the model
// folder's defaults to the engine; an explicit 0 is greedy even when the
// request or the folder names a top_k.
func TestEngineRequestTemperature(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	cases := []struct {
		name     string
		temp     *float64
		topK     *int
		wantTemp float64
		wantTopK int
	}{
		{"omitted", nil, nil, 0, 0},
		{"explicit zero", f(0), nil, 0, 1},
		{"explicit zero with top_k", f(0), i(40), 0, 1},
		{"sampled", f(0.7), i(40), 0.7, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req wire.ChatRequest
			req.Temperature, req.TopK = c.temp, c.topK
			got := engineRequest(&req, "p")
			if got.Temperature != c.wantTemp || got.TopK != c.wantTopK {
				t.Fatalf("temperature %v top_k %d, want %v and %d", got.Temperature, got.TopK, c.wantTemp, c.wantTopK)
			}
		})
	}
}

// TestEngineRequestSpeculation: speculation false turns speculative
// decoding off for the request; absent or true leaves it on.
func TestEngineRequestSpeculation(t *testing.T) {
	b := func(v bool) *bool { return &v }
	for _, c := range []struct {
		v    *bool
		want bool
	}{{nil, false}, {b(true), false}, {b(false), true}} {
		var req wire.ChatRequest
		req.Speculation = c.v
		if got := engineRequest(&req, "p").NoSpeculation; got != c.want {
			t.Errorf("speculation %v: NoSpeculation %v", c.v, got)
		}
		creq, err := chatRequest(&req)
		if err != nil || creq.NoSpeculation != c.want {
			t.Errorf("chat: speculation %v: NoSpeculation %v (%v)", c.v, creq.NoSpeculation, err)
		}
	}
}
