package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

// spread returns a backend whose every step prefers "abcd" in that order by
// small margins, so greedy, sampling and each setting give different text.
func spread(d engine.SamplingDefaults) *enginetest.Backend {
	b := enginetest.NewBackend("", 0)
	b.ModelInfo.Defaults = d
	b.Logits = func(dst []float32, _ []int32, _ int) {
		for i := range dst {
			dst[i] = -30
		}
		for i, c := range "abcd" {
			dst[c] = 2 - 0.5*float32(i)
		}
	}
	return b
}

func TestModelDefaultsFillUnsetFields(t *testing.T) {
	seed := int64(7)
	sampling := engine.SamplingDefaults{DoSample: true, Temperature: 1.5, TopK: 3, TopP: 0.9, RepetitionPenalty: 1.3}
	cases := []struct {
		name     string
		defaults engine.SamplingDefaults
		req      engine.Request
		same     engine.Request // the request that, without defaults, gives the same text
		filled   []string
	}{
		{"a request without temperature gets the model's", sampling, engine.Request{},
			engine.Request{Temperature: 1.5, TopK: 3, TopP: 0.9, RepetitionPenalty: 1.3},
			[]string{"temperature", "top_k", "top_p", "repetition_penalty"}},
		{"a request with temperature keeps its own", sampling, engine.Request{Temperature: 0.4, TopP: 1},
			engine.Request{Temperature: 0.4, TopK: 3, TopP: 1, RepetitionPenalty: 1.3},
			[]string{"top_k", "repetition_penalty"}},
		{"do_sample without a temperature samples at 1", engine.SamplingDefaults{DoSample: true}, engine.Request{},
			engine.Request{Temperature: 1}, []string{"temperature"}},
		{"do_sample false stays greedy and ignores the sampling values",
			engine.SamplingDefaults{Temperature: 1.5, TopK: 1, TopP: 0.5, RepetitionPenalty: 1.3}, engine.Request{},
			engine.Request{RepetitionPenalty: 1.3}, []string{"repetition_penalty"}},
		{"do_sample false and a request temperature samples with the request's settings only",
			engine.SamplingDefaults{Temperature: 1.5, TopK: 1}, engine.Request{Temperature: 1.2},
			engine.Request{Temperature: 1.2}, nil},
		{"neutral values turn defaults off", sampling, engine.Request{TopK: 1, RepetitionPenalty: 1},
			engine.Request{Temperature: 1.5, TopK: 1, TopP: 0.9, RepetitionPenalty: 1},
			[]string{"temperature", "top_p"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(d engine.SamplingDefaults, req engine.Request) (string, engine.Result) {
				t.Helper()
				e, _ := enginetest.NewEngineBackend(t, spread(d), quiet())
				req.Prompt, req.MaxTokens, req.Seed = "go", 40, &seed
				text, res, err := e.Generate(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				return text, res
			}
			got, res := run(c.defaults, c.req)
			want, _ := run(engine.SamplingDefaults{}, c.same)
			if got != want {
				t.Errorf("text %q; want %q, as the explicit request gives", got, want)
			}
			if !slices.Equal(res.ModelDefaults, c.filled) {
				t.Errorf("ModelDefaults %q; want %q", res.ModelDefaults, c.filled)
			}
		})
	}
}

func TestModelMaxLength(t *testing.T) {
	cases := []struct {
		name      string
		maxLength int
		opts      []engine.Option
		req       engine.Request
		want      int
		filled    []string
	}{
		{"caps prompt plus generated tokens", 10, nil, engine.Request{}, 8, []string{"max_tokens"}},
		{"the request's max_tokens wins", 10, nil, engine.Request{MaxTokens: 20}, 20, nil},
		{"the engine's default wins", 10, []engine.Option{engine.WithDefaultMaxTokens(4)}, engine.Request{}, 4, nil},
		{"a prompt at max_length leaves the window", 2, nil, engine.Request{}, 4096 - 2, nil},
		{"past the window changes nothing", 1 << 20, nil, engine.Request{}, 4096 - 2, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := cycling("xy")
			b.ModelInfo.Defaults.MaxLength = c.maxLength
			e, _ := enginetest.NewEngineBackend(t, b, append([]engine.Option{quiet(), engine.WithLoopGuard(engine.LoopGuard{Off: true})}, c.opts...)...)
			c.req.Prompt = "go"
			_, res, err := e.Generate(t.Context(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.MaxTokens != c.want || res.Usage.CompletionTokens != c.want || !slices.Equal(res.ModelDefaults, c.filled) {
				t.Errorf("max_tokens %d, %d generated, defaults %q; want %d and %q", res.MaxTokens, res.Usage.CompletionTokens, res.ModelDefaults, c.want, c.filled)
			}
		})
	}
}

func TestModelDefaultsAreReportedAndChecked(t *testing.T) {
	d := engine.SamplingDefaults{DoSample: true, Temperature: 0.7, TopK: 20, TopP: 0.8, RepetitionPenalty: 1.05, MaxLength: 512}
	e, _ := enginetest.NewEngineBackend(t, spread(d), quiet())
	if got := e.Info().Defaults; got != d {
		t.Errorf("Info().Defaults = %+v; want %+v", got, d)
	}
	_, err := engine.New(spread(engine.SamplingDefaults{Temperature: 3}), enginetest.ByteTokenizer{}, quiet())
	var le *engine.ModelLoadError
	var ie *engine.InvalidRequestError
	if !errors.As(err, &le) || !errors.As(err, &ie) || ie.Param != "temperature" {
		t.Errorf("New with temperature 3 in the folder: %v; want a *ModelLoadError over temperature's *InvalidRequestError", err)
	}
}
