package backend_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/backend"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
	"go.uber.org/goleak"
)

const answer = "<think>\nplan\n</think>\n\nHello from Prism."

func TestMain(m *testing.M) {
	code := m.Run()
	for _, root := range []string{scriptedRoot, slowRoot} {
		if root != "" {
			_ = os.RemoveAll(root)
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var quiet = slog.New(slog.DiscardHandler)

var (
	scriptedOnce sync.Once
	scriptedRoot string
)

// scripted writes, once for the package, a model folder "think" whose
// greedy answer is answer, and returns its models directory.
func scripted(t *testing.T) string {
	t.Helper()
	fixtures.ORTLib(t)
	scriptedOnce.Do(func() { scriptedRoot = writeScripted(t) })
	if scriptedRoot == "" {
		t.Fatal("the scripted model could not be written")
	}
	return scriptedRoot
}

func writeScripted(t *testing.T) string {
	tokDir := fixtures.TokenizerDir(t, "qwen3")
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	eos, _ := tok.TokenToID("<|im_end|>")
	root, err := os.MkdirTemp("", "prism-backend-models-")
	if err != nil {
		t.Fatal(err)
	}
	cfg := onnxgen.Tiny()
	cfg.Context = 256
	cfg.TokenizerDir = tokDir
	cfg.Vocab = 0
	cfg.Script = tok.Encode(answer)
	cfg.ScriptEOS = int(eos)
	if err := onnxgen.Write(context.Background(), filepath.Join(root, "think"), cfg); err != nil {
		t.Fatal(err)
	}
	return root
}

// closedURL is an API root nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

func environ(t *testing.T) []string {
	return append(os.Environ(), "PRISM_HOME="+t.TempDir(), "PRISM_DEVICE=cpu")
}

func TestFallbackAndServer(t *testing.T) {
	root := scripted(t)
	ctx := t.Context()
	local := backend.New(backend.Config{BaseURL: closedURL(t), Sources: catalog.Sources{ModelsDirs: []string{root}}, Environ: environ(t), Logger: quiet})
	defer local.Close()

	var deltas int
	res, err := local.Chat(ctx, backend.ChatRequest{Messages: []backend.Message{{Role: "user", Content: "hi"}}},
		func(backend.Delta) error { deltas++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != backend.KindInProcess || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "unreachable") {
		t.Errorf("backend %q warnings %q, want in-process with an unreachable warning", res.Backend, res.Warnings)
	}
	if strings.TrimSpace(res.Text) != "Hello from Prism." || strings.TrimSpace(res.Reasoning) != "plan" || res.Model != "think" || res.Usage.CompletionTokens == 0 || deltas < 2 {
		t.Errorf("result %+v after %d deltas", res, deltas)
	}
	st, err := local.Status(ctx)
	if err != nil || st.Device != "cpu" || st.Model != "think" {
		t.Errorf("status %+v, %v", st, err)
	}

	// The same handler behind a real listener is "the server".
	srv := httptest.NewServer(backend.HandlerOf(t, local))
	defer srv.Close()
	remote := backend.New(backend.Config{BaseURL: srv.URL + "/v1", Logger: quiet})
	defer remote.Close()
	res, err = remote.Chat(ctx, backend.ChatRequest{Model: "think", Messages: []backend.Message{{Role: "user", Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != backend.KindServer || len(res.Warnings) != 0 || strings.TrimSpace(res.Text) != "Hello from Prism." {
		t.Errorf("remote result %+v", res)
	}
	_, err = remote.Chat(ctx, backend.ChatRequest{Model: "nope", Messages: []backend.Message{{Role: "user", Content: "hi"}}}, nil)
	if ae, ok := err.(*backend.APIError); !ok || ae.Code() != "model_not_found" {
		t.Errorf("unknown model: %v, want an APIError model_not_found", err)
	}
}

func TestCancelStopsTheStream(t *testing.T) {
	root := scripted(t)
	b := backend.New(backend.Config{Local: true, Sources: catalog.Sources{ModelsDirs: []string{root}}, Environ: environ(t), Logger: quiet})
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	_, err := b.Chat(ctx, backend.ChatRequest{Messages: []backend.Message{{Role: "user", Content: "hi"}}},
		func(backend.Delta) error { cancel(); return nil })
	if err == nil {
		t.Fatal("a cancelled chat succeeded")
	}
}
