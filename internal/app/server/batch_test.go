//go:build cgo

package server_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
)

// answer is what a chat completion gave, compared between runs.
type answer struct {
	content, finish string
	tokens          int64
}

// With -max-batch 4 the server runs concurrent requests on one model
// together, and each answer (greedy; streamed or not; one in JSON mode)
// is the one the same request gets alone, through the official client.
func TestConcurrentRequestsBatched(t *testing.T) {
	qs := startOn(t, qaModels.Path(t), nil, nil, func(string) []prism.Option {
		return []prism.Option{prism.WithMaxBatch(4)}
	})
	ts := qs.testServer
	requests := make([]openai.ChatCompletionNewParams, 6)
	for i := range requests {
		p := openai.ChatCompletionNewParams{
			Model:       "random",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Request %d: %s", i, "tell me something"[:6+2*i]))},
			MaxTokens:   openai.Int(int64(24 + 8*i)),
			Temperature: openai.Float(0),
			// A random-weight model's greedy answer is one token over and
			// over; penalties make it move through the vocabulary, in an
			// order each prompt changes.
			FrequencyPenalty: openai.Float(2),
			PresencePenalty:  openai.Float(2),
		}
		if i == 2 {
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
		}
		requests[i] = p
	}
	ask := func(i int) (answer, error) {
		if i%2 == 1 {
			p := requests[i]
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := ts.client.Chat.Completions.NewStreaming(t.Context(), p)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				return answer{}, err
			}
			c := acc.Choices[0]
			return answer{c.Message.Content, c.FinishReason, acc.Usage.CompletionTokens}, nil
		}
		resp, err := ts.client.Chat.Completions.New(t.Context(), requests[i])
		if err != nil {
			return answer{}, err
		}
		return answer{resp.Choices[0].Message.Content, resp.Choices[0].FinishReason, resp.Usage.CompletionTokens}, nil
	}

	alone := make([]answer, len(requests))
	for i := range requests {
		a, err := ask(i)
		if err != nil {
			t.Fatalf("request %d alone: %v", i, err)
		}
		alone[i] = a
	}
	if st := ts.mgr.Stats(); st.Batch != engine.BatchContinuous || st.MaxBatch != 4 {
		t.Fatalf("the model decodes %q, max batch %d (%s); want continuous, 4", st.Batch, st.MaxBatch, st.BatchReason)
	}

	// Watch how many requests hold the model at once while all run.
	var most atomic.Int64
	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
			if n := int64(ts.mgr.Stats().Leases); n > most.Load() {
				most.Store(n)
			}
		}
	})
	got := make([]answer, len(requests))
	errs := make([]error, len(requests))
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() { got[i], errs[i] = ask(i) })
	}
	wg.Wait()
	close(done)
	watch.Wait()
	for i := range requests {
		if errs[i] != nil {
			t.Errorf("request %d beside the others: %v", i, errs[i])
		} else if got[i] != alone[i] {
			t.Errorf("request %d beside the others: %+v; alone %+v", i, got[i], alone[i])
		}
	}
	if m := most.Load(); m < 2 || m > 4 {
		t.Errorf("at most %d requests held the model at once; want 2 to 4", m)
	}
	var h map[string]any
	getJSON(t, qs, "/health", &h)
	if h["batch"] != "continuous" || h["max_batch"] != float64(4) {
		t.Errorf("/health batch %v, max_batch %v; want continuous, 4", h["batch"], h["max_batch"])
	}
}
