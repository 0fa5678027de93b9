//go:build cgo

package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/internal/fixtures"
)

// BenchmarkChatLayerToken is the cost per streamed token at each floor,
// side by side in one run over the same fake model: the chat handler's
// whole path (the wire mapped onto the chat layer, chunk encode, SSE
// frame, write), the chat layer alone (template, reasoning split,
// tool-call parse, events), and Engine.Stream alone. handler minus chat
// is what the server adds per token; chat over engine what the chat
// layer adds.
func BenchmarkChatLayerToken(b *testing.B) {
	const short, long = 100, 2100
	b.Run("handler", func(b *testing.B) {
		body := fakeChat + `,"stream":true}`
		fs, fl := newFake(b, letters(short), nil), newFake(b, letters(long), nil)
		run := func(fs *fakeServer) func() {
			return func() {
				req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
				req.Host = "127.0.0.1"
				fs.handler.ServeHTTP(&discard{h: http.Header{}}, req)
			}
		}
		run(fs)()
		run(fl)()
		marginal(b, run(fs), run(fl), long-short)
	})
	b.Run("chat", func(b *testing.B) {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		fs, fl := newFake(b, letters(short), nil), newFake(b, letters(long), nil)
		run := func(fs *fakeServer) func() {
			chat := prism.NewEngineChat(fs.mgr, prism.NewModels(log), prism.WithLogger(log))
			req := prism.ChatRequest{Messages: []prism.Message{prism.User("hi")}}
			return func() {
				st, err := chat.ChatStream(context.Background(), fs.key, req)
				if err != nil {
					b.Fatal(err)
				}
				for st.Next() {
				}
				st.Close()
			}
		}
		rs, rl := run(fs), run(fl)
		rs()
		rl()
		marginal(b, rs, rl, long-short)
	})
	b.Run("engine", func(b *testing.B) {
		es := enginetest.NewEngine(b, letters(short))
		el := enginetest.NewEngine(b, letters(long))
		run := func(e *engine.Engine) func() {
			return func() {
				st, err := e.Stream(context.Background(), engine.Request{Prompt: "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"})
				if err != nil {
					b.Fatal(err)
				}
				for st.Next() {
				}
				st.Close()
			}
		}
		marginal(b, run(es), run(el), long-short)
	})
}

// BenchmarkChatLayerTokensPerSecond is generation speed at the tiny shape
// (the "count" model) through the chat layer — its template, reasoning
// split and tool-call parser over a Manager — beside Engine.Stream on the
// same model with the same prompt.
func BenchmarkChatLayerTokensPerSecond(b *testing.B) {
	dir := qaModels.Path(b)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	quiet := prism.WithLogger(log)
	models := prism.NewModels(log)
	opts := []prism.Option{prism.WithDevice("cpu"), prism.WithORTLibrary(fixtures.ORTLib(b)), prism.WithoutLoadLock(), quiet}
	req := prism.ChatRequest{Messages: []prism.Message{prism.User("Count.")}}
	key := filepath.Join(dir, "count")
	chat := prism.NewEngineChat(nil, models, quiet)
	prompt, _, err := chat.Render(context.Background(), key, req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("engine", func(b *testing.B) {
		eng, err := prism.Open(context.Background(), key, append(opts, prism.WithModels(models))...)
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close()
		tokens, cpu0 := 0, cpuTime()
		for b.Loop() {
			st, err := eng.Stream(context.Background(), engine.Request{Prompt: prompt})
			if err != nil {
				b.Fatal(err)
			}
			for st.Next() {
			}
			tokens += st.Result().Usage.CompletionTokens
			st.Close()
		}
		report(b, tokens, cpu0)
	})
	b.Run("chat", func(b *testing.B) {
		mgr, err := engine.NewManager(models.Loader(opts...))
		if err != nil {
			b.Fatal(err)
		}
		defer mgr.Close()
		chat := prism.NewEngineChat(mgr, models, quiet)
		once := func() int {
			msg, err := prism.Complete(context.Background(), chat, key, req)
			if err != nil {
				b.Fatal(err)
			}
			return msg.Usage.CompletionTokens
		}
		once() // load the model
		tokens, cpu0 := 0, cpuTime()
		for b.Loop() {
			tokens += once()
		}
		report(b, tokens, cpu0)
	})
}
