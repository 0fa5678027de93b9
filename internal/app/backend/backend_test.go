package backend_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/app/backend"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/scripted"
	"go.uber.org/goleak"
)

const answer = "<think>\nplan\n</think>\n\nHello from Prism."

func TestMain(m *testing.M) {
	code := m.Run()
	thinkModels.Remove()
	slowModels.Remove()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var quiet = slog.New(slog.DiscardHandler)

// thinkModels is a models directory with the folder "think", whose greedy
// answer is answer, written once for the package.
var thinkModels = scripted.Folder{Models: []scripted.Model{{Name: "think", Answer: answer, Context: 256}}}

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
	root := thinkModels.Path(t)
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
	root := thinkModels.Path(t)
	b := backend.New(backend.Config{Local: true, Sources: catalog.Sources{ModelsDirs: []string{root}}, Environ: environ(t), Logger: quiet})
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	_, err := b.Chat(ctx, backend.ChatRequest{Messages: []backend.Message{{Role: "user", Content: "hi"}}},
		func(backend.Delta) error { cancel(); return nil })
	if err == nil {
		t.Fatal("a cancelled chat succeeded")
	}
}
