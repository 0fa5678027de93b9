//go:build cgo

package server_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism/engine"
)

func bytesOf(b []int64) string {
	s := make([]byte, len(b))
	for i, c := range b {
		s[i] = byte(c)
	}
	return string(s)
}

// checkContentLogprobs checks that the entries spell content and are
// log-probabilities with top alternatives each.
func checkContentLogprobs(t *testing.T, content string, lp []openai.ChatCompletionTokenLogprob, top int) {
	t.Helper()
	var tokens, raw strings.Builder
	for i, e := range lp {
		tokens.WriteString(e.Token)
		raw.WriteString(bytesOf(e.Bytes))
		if e.Logprob > 0 || len(e.TopLogprobs) != top {
			t.Errorf("entry %d: %+v", i, e)
		}
		for j, alt := range e.TopLogprobs {
			if alt.Logprob > 0 || bytesOf(alt.Bytes) != alt.Token || j > 0 && alt.Logprob > e.TopLogprobs[j-1].Logprob {
				t.Errorf("entry %d alternative %d: %+v", i, j, alt)
			}
		}
	}
	if raw.String() != content || tokens.String() != content {
		t.Errorf("entries spell %q (bytes %q), content %q", tokens.String(), raw.String(), content)
	}
}

// entries strips what openai-go adds (raw JSON) for comparisons.
type entry struct {
	Token   string
	Logprob float64
	Bytes   []int64
	Top     []entry
}

func plain(lp []openai.ChatCompletionTokenLogprob) []entry {
	out := []entry{}
	for _, e := range lp {
		x := entry{Token: e.Token, Logprob: e.Logprob, Bytes: e.Bytes}
		for _, a := range e.TopLogprobs {
			x.Top = append(x.Top, entry{Token: a.Token, Logprob: a.Logprob, Bytes: a.Bytes})
		}
		out = append(out, x)
	}
	return out
}

// streamedLogprobs runs params streamed and returns the content and the
// logprobs of every chunk, joined.
func streamedLogprobs(t *testing.T, ts *testServer, params openai.ChatCompletionNewParams) (string, []openai.ChatCompletionTokenLogprob, string) {
	t.Helper()
	stream := ts.client.Chat.Completions.NewStreaming(t.Context(), params)
	var content strings.Builder
	var lp []openai.ChatCompletionTokenLogprob
	finish := ""
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 {
			continue
		}
		content.WriteString(c.Choices[0].Delta.Content)
		lp = append(lp, c.Choices[0].Logprobs.Content...)
		if c.Choices[0].FinishReason != "" {
			finish = c.Choices[0].FinishReason
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return content.String(), lp, finish
}

// Chat logprobs cover the content's tokens and only them: the reasoning's
// and the tool calls' tokens are not in logprobs.content, the entries'
// bytes spell the content, and a streamed answer carries the same entries
// as the whole one.
func TestChatLogprobs(t *testing.T) {
	ts := common(t)
	cases := []struct {
		name   string
		params func() openai.ChatCompletionNewParams
		want   string // the content, "" for none
	}{
		{"reasoning then content", func() openai.ChatCompletionNewParams { return hello("think") }, "Hello there, friend."},
		{"stop string", func() openai.ChatCompletionNewParams {
			p := hello("think")
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"re, fr"}}
			return p
		}, "Hello the"},
		{"json mode", func() openai.ChatCompletionNewParams {
			p := hello("json")
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
			return p
		}, jsonAnswer},
		{"tool call", func() openai.ChatCompletionNewParams {
			p := hello("tool")
			p.Tools = weatherTool()
			return p
		}, ""},
		{"forced tool call", func() openai.ChatCompletionNewParams {
			p := hello("tool")
			p.Tools = weatherTool()
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
			return p
		}, ""},
	}
	for _, c := range cases {
		for _, top := range []int{0, 3} {
			t.Run(c.name, func(t *testing.T) {
				params := c.params()
				params.Logprobs = openai.Bool(true)
				if top > 0 {
					params.TopLogprobs = openai.Int(int64(top))
				}
				resp, err := ts.client.Chat.Completions.New(t.Context(), params)
				if err != nil {
					t.Fatal(err)
				}
				ch := resp.Choices[0]
				if strings.TrimSpace(ch.Message.Content) != c.want {
					t.Fatalf("content %q, want %q", ch.Message.Content, c.want)
				}
				lp := ch.Logprobs.Content
				if !ch.Logprobs.JSON.Content.Valid() {
					t.Fatalf("no logprobs.content: %s", resp.RawJSON())
				}
				checkContentLogprobs(t, ch.Message.Content, lp, top)
				if c.want != "" && (len(lp) == 0 || int64(len(lp)) >= resp.Usage.CompletionTokens) {
					t.Errorf("%d entries for %d completion tokens: reasoning tokens must not be there", len(lp), resp.Usage.CompletionTokens)
				}
				// The scripted model puts nearly all the mass on its token.
				for _, e := range lp {
					if e.Logprob < -1e-3 || top > 0 && e.TopLogprobs[0].Logprob != e.Logprob {
						t.Errorf("scripted token %+v", e)
					}
				}
				content, slp, finish := streamedLogprobs(t, ts, params)
				if content != ch.Message.Content || finish != ch.FinishReason {
					t.Errorf("streamed %q (%s), whole %q (%s)", content, finish, ch.Message.Content, ch.FinishReason)
				}
				if got, want := plain(slp), plain(lp); !reflect.DeepEqual(got, want) {
					t.Errorf("streamed logprobs differ:\n%+v\n%+v", got, want)
				}
			})
		}
	}
}

// Without logprobs the choice and every chunk carry logprobs: null.
func TestChatWithoutLogprobs(t *testing.T) {
	ts := common(t)
	resp, err := ts.client.Chat.Completions.New(t.Context(), hello("think"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.RawJSON(), `"content":[`) || !strings.Contains(resp.RawJSON(), `"logprobs":null`) {
		t.Errorf("logprobs not asked for: %s", resp.RawJSON())
	}
	_, lp, _ := streamedLogprobs(t, ts, hello("think"))
	if len(lp) != 0 {
		t.Errorf("streamed logprobs not asked for: %+v", lp)
	}
}

// /v1/completions logprobs: N gives the legacy lists: tokens spelling the
// text, text_offset into it, maps of the N alternatives plus the chosen
// token; streamed the same.
func TestCompletionLogprobs(t *testing.T) {
	ts := common(t)
	params := openai.CompletionNewParams{Model: "think", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once")},
		MaxTokens: openai.Int(100), Logprobs: openai.Int(2)}
	resp, err := ts.client.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	lp := ch.Logprobs
	if ch.Text != thinkAnswer || len(lp.Tokens) == 0 || len(lp.TokenLogprobs) != len(lp.Tokens) || len(lp.TopLogprobs) != len(lp.Tokens) || len(lp.TextOffset) != len(lp.Tokens) {
		t.Fatalf("text %q, logprobs %+v", ch.Text, lp)
	}
	var joined strings.Builder
	for i, tok := range lp.Tokens {
		if int(lp.TextOffset[i]) != joined.Len() {
			t.Errorf("token %d at offset %d, want %d", i, lp.TextOffset[i], joined.Len())
		}
		joined.WriteString(tok)
		if m := lp.TopLogprobs[i]; len(m) == 0 || len(m) > 3 || lp.TokenLogprobs[i] > 0 || lp.TokenLogprobs[i] < -1e-3 {
			t.Errorf("token %d %q: logprob %v, top %v", i, tok, lp.TokenLogprobs[i], m)
		}
	}
	if joined.String() != ch.Text {
		t.Errorf("tokens spell %q, text %q", joined.String(), ch.Text)
	}
	// The values are the engine's, bit for bit: the same request straight
	// through Engine.Stream on the resident model.
	lease, err := ts.mgr.Use(t.Context(), filepath.Join(models.Path(t), "think"), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := lease.Engine().Stream(t.Context(), engine.Request{Prompt: "Once", MaxTokens: 100, Logprobs: true, TopLogprobs: 2})
	if err != nil {
		lease.Release()
		t.Fatal(err)
	}
	tok := lease.Engine().Tokenizer()
	for i := 0; st.Next() && i < len(lp.Tokens); i++ {
		et := st.Token()
		if float32(lp.TokenLogprobs[i]) != et.Logprob || lp.Tokens[i] != string(et.Piece) {
			t.Errorf("token %d: served %q %v, engine %q %v", i, lp.Tokens[i], lp.TokenLogprobs[i], et.Piece, et.Logprob)
		}
		for _, alt := range et.TopLogprobs {
			if v, ok := lp.TopLogprobs[i][tok.Decode([]int32{alt.ID}, false)]; !ok || float32(v) != alt.Logprob {
				t.Errorf("token %d: alternative %d served as %v (%v), engine %v", i, alt.ID, v, ok, alt.Logprob)
			}
		}
	}
	_ = st.Close()
	lease.Release()

	stream := ts.client.Completions.NewStreaming(t.Context(), params)
	var tokens []string
	var values []float64
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 {
			tokens = append(tokens, c.Choices[0].Logprobs.Tokens...)
			values = append(values, c.Choices[0].Logprobs.TokenLogprobs...)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tokens, lp.Tokens) || !reflect.DeepEqual(values, lp.TokenLogprobs) {
		t.Errorf("streamed %q %v, whole %q %v", tokens, values, lp.Tokens, lp.TokenLogprobs)
	}
}
