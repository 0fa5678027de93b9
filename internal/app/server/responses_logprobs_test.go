//go:build cgo

package server_test

// Log-probabilities on POST /v1/responses through the official openai-go
// client: the same entries as chat/completions for the same request, the
// streamed deltas' entries joining to the whole response's.

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

func responseEntries(lp []responses.ResponseOutputTextLogprob) []entry {
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

// withoutBytes drops what the typed delta events do not have: openai-go's
// delta and done entries carry no bytes (Prism sends them all the same).
func withoutBytes(es []entry) []entry {
	out := []entry{}
	for _, e := range es {
		x := entry{Token: e.Token, Logprob: e.Logprob}
		for _, a := range e.Top {
			x.Top = append(x.Top, entry{Token: a.Token, Logprob: a.Logprob})
		}
		out = append(out, x)
	}
	return out
}

// messageLogprobs returns the text of the response's messages and their
// parts' entries, joined.
func messageLogprobs(t *testing.T, r *responses.Response) (string, []entry) {
	t.Helper()
	var text strings.Builder
	out := []entry{}
	for _, it := range r.Output {
		if it.Type != "message" {
			continue
		}
		for _, c := range it.AsMessage().Content {
			if !c.JSON.Logprobs.Valid() {
				t.Errorf("output_text part without logprobs: %s", c.RawJSON())
			}
			text.WriteString(c.Text)
			out = append(out, responseEntries(c.Logprobs)...)
		}
	}
	return text.String(), out
}

// streamedResponseLogprobs runs params streamed and returns the deltas'
// text and entries, the done events' entries and the final response.
func streamedResponseLogprobs(t *testing.T, ts *testServer, params responses.ResponseNewParams) (string, []entry, []entry, responses.Response) {
	t.Helper()
	stream := ts.client.Responses.NewStreaming(t.Context(), params)
	var text strings.Builder
	deltas, done := []entry{}, []entry{}
	var final responses.Response
	for stream.Next() {
		switch e := stream.Current(); e.Type {
		case "response.output_text.delta":
			d := e.AsResponseOutputTextDelta()
			text.WriteString(d.Delta)
			for _, x := range d.Logprobs {
				en := entry{Token: x.Token, Logprob: x.Logprob}
				for _, a := range x.TopLogprobs {
					en.Top = append(en.Top, entry{Token: a.Token, Logprob: a.Logprob})
				}
				deltas = append(deltas, en)
			}
		case "response.output_text.done":
			for _, x := range e.AsResponseOutputTextDone().Logprobs {
				en := entry{Token: x.Token, Logprob: x.Logprob}
				for _, a := range x.TopLogprobs {
					en.Top = append(en.Top, entry{Token: a.Token, Logprob: a.Logprob})
				}
				done = append(done, en)
			}
		case "response.completed", "response.incomplete":
			final = e.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return text.String(), deltas, done, final
}

// asking sets what asks for log-probabilities: include, top_logprobs, or
// both.
func asking(p responses.ResponseNewParams, include bool, top int) responses.ResponseNewParams {
	if include {
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent, responses.ResponseIncludableMessageOutputTextLogprobs}
	}
	if top > 0 || include {
		p.TopLogprobs = openai.Int(int64(top))
	}
	return p
}

// checkResponseLogprobs runs params whole and streamed and checks the
// entries: they spell the messages' text, bytes and tokens, with top
// alternatives each; the streamed deltas carry the same entries (the done
// events and the final response too); and, unless chat is nil, they equal
// those of the chat completion chat for the same request. It returns the
// entries.
func checkResponseLogprobs(t *testing.T, ts *testServer, params responses.ResponseNewParams, top int, chat *openai.ChatCompletionNewParams) []entry {
	t.Helper()
	resp, err := ts.client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	text, lp := messageLogprobs(t, resp)
	var tokens, raw strings.Builder
	for i, e := range lp {
		tokens.WriteString(e.Token)
		raw.WriteString(bytesOf(e.Bytes))
		if e.Logprob > 0 || len(e.Top) != top {
			t.Errorf("entry %d: %+v", i, e)
		}
		for j, alt := range e.Top {
			if alt.Logprob > 0 || bytesOf(alt.Bytes) != alt.Token || j > 0 && alt.Logprob > e.Top[j-1].Logprob {
				t.Errorf("entry %d alternative %d: %+v", i, j, alt)
			}
		}
	}
	if tokens.String() != text || raw.String() != text {
		t.Errorf("entries spell %q (bytes %q), text %q", tokens.String(), raw.String(), text)
	}
	if text != "" && int64(len(lp)) > resp.Usage.OutputTokens-resp.Usage.OutputTokensDetails.ReasoningTokens {
		t.Errorf("%d entries for %d output tokens, %d of them reasoning", len(lp), resp.Usage.OutputTokens, resp.Usage.OutputTokensDetails.ReasoningTokens)
	}

	stext, deltas, done, final := streamedResponseLogprobs(t, ts, params)
	if stext != text {
		t.Errorf("streamed text %q, whole %q", stext, text)
	}
	if want := withoutBytes(lp); !reflect.DeepEqual(deltas, want) || !reflect.DeepEqual(done, want) {
		t.Errorf("streamed entries differ:\ndeltas %+v\ndone   %+v\nwhole  %+v", deltas, done, want)
	}
	if ftext, flp := messageLogprobs(t, &final); ftext != text || !reflect.DeepEqual(flp, lp) {
		t.Errorf("final response %q %+v, whole %q %+v", ftext, flp, text, lp)
	}

	if chat != nil {
		c, err := ts.client.Chat.Completions.New(t.Context(), *chat)
		if err != nil {
			t.Fatal(err)
		}
		if got := plain(c.Choices[0].Logprobs.Content); c.Choices[0].Message.Content != text || !reflect.DeepEqual(got, lp) {
			t.Errorf("chat/completions: %q %+v\n/v1/responses: %q %+v", c.Choices[0].Message.Content, got, text, lp)
		}
	}
	return lp
}

// TestResponsesLogprobs: on the scripted models, for every way of asking,
// the output text's tokens and only them (not the reasoning's, not a
// call's) with their alternatives, the same streamed and not, and the same
// as chat/completions gives for the same conversation.
func TestResponsesLogprobs(t *testing.T) {
	ts := common(t)
	cases := []struct {
		name   string
		params func() responses.ResponseNewParams
		chat   func() openai.ChatCompletionNewParams // nil: not compared
		want   string
	}{
		{"reasoning then text", func() responses.ResponseNewParams { return sayHi("think") },
			func() openai.ChatCompletionNewParams { return hello("think") }, "Hello there, friend."},
		{"json mode", func() responses.ResponseNewParams {
			p := sayHi("json")
			p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
			return p
		}, func() openai.ChatCompletionNewParams {
			p := hello("json")
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
			return p
		}, jsonAnswer},
		{"function call", func() responses.ResponseNewParams {
			p := sayHi("tool")
			p.Tools = weatherFunction()
			return p
		}, nil, ""},
	}
	for _, c := range cases {
		for _, ask := range []struct {
			include bool
			top     int
		}{{true, 0}, {false, 3}, {true, 2}} {
			t.Run(c.name, func(t *testing.T) {
				params := asking(c.params(), ask.include, ask.top)
				params.Temperature = openai.Float(0)
				var chat *openai.ChatCompletionNewParams
				if c.chat != nil {
					cp := c.chat()
					cp.Logprobs, cp.Temperature, cp.Seed = openai.Bool(true), openai.Float(0), openai.Int(7)
					if ask.top > 0 {
						cp.TopLogprobs = openai.Int(int64(ask.top))
					}
					chat = &cp
				}
				lp := checkResponseLogprobs(t, ts, params, ask.top, chat)
				if c.want != "" && len(lp) == 0 {
					t.Errorf("no entries for %q", c.want)
				}
				if c.want == "" && len(lp) != 0 {
					t.Errorf("entries for a call: %+v", lp)
				}
			})
		}
	}
}

// Without include or top_logprobs above 0, logprobs are empty lists, as
// OpenAI sends them; top_logprobs: 0 alone does not ask.
func TestResponsesWithoutLogprobs(t *testing.T) {
	ts := common(t)
	params := sayHi("think")
	params.TopLogprobs = openai.Int(0)
	resp, err := ts.client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if _, lp := messageLogprobs(t, resp); len(lp) != 0 || !strings.Contains(resp.RawJSON(), `"logprobs":[]`) || resp.TopLogprobs != 0 {
		t.Errorf("logprobs not asked for: %s", resp.RawJSON())
	}
	if _, deltas, done, _ := streamedResponseLogprobs(t, ts, params); len(deltas) != 0 || len(done) != 0 {
		t.Errorf("streamed logprobs not asked for: %+v %+v", deltas, done)
	}
}

// logprobModels writes a random-weight model (a real distribution, with
// plausible alternatives at every position) and a scripted one that writes text before
// a call, with the Qwen3 tokenizer, and serves them.
func logprobModels(t *testing.T) *testServer {
	t.Helper()
	tokDir := fixtures.TokenizerDir(t, "qwen3")
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	eos, _ := tok.TokenToID("<|im_end|>")
	root := t.TempDir()
	for name, script := range map[string]string{"random": "", "preamble": "Let me check.\n" + toolAnswer} {
		cfg := onnxgen.Tiny()
		cfg.TokenizerDir, cfg.Vocab, cfg.Seed, cfg.Context = tokDir, 0, 5, 512
		if script != "" {
			cfg.Script, cfg.ScriptEOS = tok.Encode(script), int(eos)
		}
		if err := onnxgen.Write(context.Background(), filepath.Join(root, name), cfg); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	// The tests compare log-probabilities bit for bit across requests.
	// A verify step's row differs from a one-token step's in the last
	// bits (as a reused prefix does), and how much is drafted follows the
	// measured timings, so speculation is off here.
	qs, stop := newServer(t, models.Path(t), nil, func(c *server.Config) { c.Catalog = cat },
		func(string) []prism.Option {
			return []prism.Option{prism.WithEngineOptions(engine.WithSpeculation(false))}
		})
	t.Cleanup(stop)
	return qs.testServer
}

// On a random-weight model the entries are the model's distribution, equal
// on both endpoints (greedy: the Responses API has no seed) and streamed
// or not; text written before a call keeps its entries in its own message,
// the entry decided only when the call began included.
func TestResponsesLogprobsModels(t *testing.T) {
	ts := logprobModels(t)
	params := asking(sayHi("random"), true, 5)
	params.Temperature, params.MaxOutputTokens = openai.Float(0), openai.Int(24)
	chat := hello("random")
	chat.Logprobs, chat.TopLogprobs, chat.Temperature, chat.Seed, chat.MaxCompletionTokens = openai.Bool(true), openai.Int(5), openai.Float(0), openai.Int(7), openai.Int(24)
	// The first request after the load prefills the whole prompt; the
	// later ones reuse its prefix, which sums the same values in another
	// order and can change a log-probability's last bits. One request
	// first puts every compared one on the same footing.
	if _, err := ts.client.Responses.New(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	lp := checkResponseLogprobs(t, ts, params, 5, &chat)
	// A real distribution: the runner-up is a plausible token at every
	// position (a scripted model leaves it about 100 below).
	for i, e := range lp {
		if e.Top[1].Logprob < -30 || e.Top[1].Logprob > e.Top[0].Logprob {
			t.Errorf("random model, entry %d: %+v", i, e)
		}
	}
	if len(lp) == 0 {
		t.Error("random model: no entries")
	}

	pre := asking(sayHi("preamble"), true, 1)
	pre.Tools = weatherFunction()
	resp, err := ts.client.Responses.New(t.Context(), pre)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.Output[0].Type != "message" || resp.Output[1].Type != "function_call" ||
		strings.TrimSpace(resp.OutputText()) != "Let me check." {
		t.Fatalf("response %s", resp.RawJSON())
	}
	checkResponseLogprobs(t, ts, pre, 1, nil)
}
