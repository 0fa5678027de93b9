//go:build cgo

package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// agentTurn sends msgs to the "agent" model, whose answer is always a
// get_weather call, and returns the answer and the messages of the next
// turn: the call sent back as the client received it (arguments as a JSON
// string) and the tool's result.
func agentTurn(t testing.TB, qs *qaServer, msgs []openai.ChatCompletionMessageParamUnion, turn int) (*openai.ChatCompletion, []openai.ChatCompletionMessageParamUnion) {
	t.Helper()
	resp, err := qs.client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "agent", Messages: msgs, Tools: weatherTool()})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 1 {
		t.Fatalf("turn %d: %s", turn, resp.RawJSON())
	}
	msgs = append(msgs, resp.Choices[0].Message.ToParam(),
		openai.ToolMessage(fmt.Sprintf(`{"temperature": %d, "sky": "clear"}`, 10+turn), calls[0].ID))
	return resp, msgs
}

// TestAgentLoopReusesPrefix: over a 10-turn agent loop — a call every
// turn, sent back with its arguments as the JSON string the wire carries,
// then the tool's result — each turn reuses the whole previous prompt and
// the model's own call (Qwen3's template renders the arguments as the
// object they encode, byte for byte what the model wrote), so the cached
// tokens grow with the history and only the tool's result is computed.
func TestAgentLoopReusesPrefix(t *testing.T) {
	qs := startOn(t, qaModels.Path(t), nil, nil, nil)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Watch the weather in Paris for me.")}
	var prev *openai.ChatCompletion
	for turn := 1; turn <= 10; turn++ {
		var resp *openai.ChatCompletion
		resp, msgs = agentTurn(t, qs, msgs, turn)
		u := resp.Usage
		if prev != nil {
			// All of the last prompt and of the call the model wrote, but
			// its final token (the end of turn, sampled and never fed back).
			want := prev.Usage.PromptTokens + prev.Usage.CompletionTokens - 1
			if got := u.PromptTokensDetails.CachedTokens; got < want {
				t.Errorf("turn %d: %d cached of %d prompt tokens; want at least %d (the previous prompt and call)", turn, got, u.PromptTokens, want)
			}
		}
		t.Logf("turn %d: prompt %d, cached %d, completion %d", turn, u.PromptTokens, u.PromptTokensDetails.CachedTokens, u.CompletionTokens)
		prev = resp
	}
}

// BenchmarkAgentLoopTTFT is time to first token through the server over
// the 10-turn agent loop of TestAgentLoopReusesPrefix, streamed: the first
// and the last turn's time to the first tool-call delta, and the last
// turn's prompt and cached tokens. With the prefix reused, turn 10
// computes only the tool's last result, about what turn 1 computes.
func BenchmarkAgentLoopTTFT(b *testing.B) {
	qs := startOn(b, qaModels.Path(b), nil, nil, nil)
	qs.serves(b, "agent")
	var first, last time.Duration
	var prompt, cached int64
	conv := 0
	for b.Loop() {
		conv++
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Agent run %d: watch the weather in Paris for me.", conv))}
		for turn := 1; turn <= 10; turn++ {
			params := openai.ChatCompletionNewParams{Model: "agent", Messages: msgs, Tools: weatherTool(),
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
			start := time.Now()
			var ttft time.Duration
			var acc openai.ChatCompletionAccumulator
			st := qs.client.Chat.Completions.NewStreaming(b.Context(), params)
			for st.Next() {
				c := st.Current()
				if ttft == 0 && len(c.Choices) > 0 && len(c.Choices[0].Delta.ToolCalls) > 0 {
					ttft = time.Since(start)
				}
				acc.AddChunk(c)
			}
			if err := st.Err(); err != nil || len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) != 1 {
				b.Fatalf("turn %d: %v %+v", turn, err, acc.Choices)
			}
			switch turn {
			case 1:
				first += ttft
			case 10:
				last += ttft
				prompt, cached = acc.Usage.PromptTokens, acc.Usage.PromptTokensDetails.CachedTokens
			}
			msgs = append(msgs, acc.Choices[0].Message.ToParam(),
				openai.ToolMessage(fmt.Sprintf(`{"temperature": %d, "sky": "clear"}`, 10+turn), acc.Choices[0].Message.ToolCalls[0].ID))
		}
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ttft-turn1-ms")
	b.ReportMetric(float64(last.Microseconds())/1000/float64(b.N), "ttft-turn10-ms")
	b.ReportMetric(float64(prompt), "prompt-turn10")
	b.ReportMetric(float64(cached), "cached-turn10")
}
