//go:build cgo

package prism_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/hubtest"
	"github.com/prism-local/prism/internal/onnxgen"
)

// hubModel writes the demo model as onnx-community exports it, with the
// fp32 and q4 variants, and serves it from a fake hub.
func hubModel(t *testing.T) *hubtest.Hub {
	t.Helper()
	tokDir := fixtures.TokenizerDir(t, "llama2")
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := onnxgen.Tiny()
	cfg.Vocab, cfg.Context, cfg.TokenizerDir = 0, 512, tokDir
	cfg.Script = tok.Encode(demoReply)
	cfg.Variants = []string{"fp32", "q4"}
	dir := filepath.Join(t.TempDir(), "export")
	if err := onnxgen.Write(t.Context(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t)
	h.AddModel(t, "onnx-community/Demo-ONNX", dir)
	return h
}

// Pull puts the model in the hub cache the environment names; the catalog
// finds it and Open loads the variant pulled, which answers.
func TestPullThenOpen(t *testing.T) {
	h := hubModel(t)
	cache := t.TempDir()
	env := prism.PullEnv([]string{"HF_ENDPOINT=" + h.URL, "HF_HUB_CACHE=" + cache, "HF_TOKEN=" + h.Token})
	var reports int
	res, err := prism.Pull(t.Context(), "onnx-community/Demo-ONNX:q4", env, prism.PullProgressFunc(func(prism.PullProgress) { reports++ }))
	if err != nil {
		t.Fatal(err)
	}
	if res.Variant != "q4" || reports == 0 {
		t.Fatalf("variant %q, %d reports", res.Variant, reports)
	}
	c, err := catalog.Scan(t.Context(), catalog.Sources{HubCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Models(); len(m) != 1 || m[0].ID != "onnx-community/Demo-ONNX" || m[0].Dir != res.Dir {
		t.Fatalf("catalog %+v", m)
	}
	e, err := open(t, res.Dir, prism.WithDevice("cpu"), prism.WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if v := e.Info().Variant; v != "q4" {
		t.Fatalf("loaded variant %q", v)
	}
	text, _, err := e.Generate(context.Background(), engine.Request{Prompt: "Who are you?"})
	if err != nil || text != demoReply {
		t.Fatalf("%q, %v", text, err)
	}
}

func TestPullOptions(t *testing.T) {
	h := hubModel(t)
	base := []prism.PullOption{prism.PullEndpoint(h.URL), prism.PullCacheDir(t.TempDir()), prism.PullRetries(prism.PullRetry{Attempts: 1})}
	cases := []struct {
		name string
		repo string
		opts []prism.PullOption
		code string
		says string
	}{
		{"two variants", "onnx-community/Demo-ONNX:q4", []prism.PullOption{prism.PullVariant("fp32")}, errcode.InvalidArgument, "PullVariant names fp32"},
		{"bad id", "onnx-community/../x", nil, errcode.InvalidArgument, "OWNER/NAME"},
		{"offline", "onnx-community/Demo-ONNX", []prism.PullOption{prism.PullOffline(true)}, errcode.HubUnavailable, "HF_HUB_OFFLINE"},
		{"env offline", "onnx-community/Demo-ONNX", []prism.PullOption{prism.PullEnv([]string{"HF_HUB_OFFLINE=1"})}, errcode.HubUnavailable, "HF_HUB_OFFLINE"},
		{"unknown revision", "onnx-community/Demo-ONNX", []prism.PullOption{prism.PullRevision("v2")}, errcode.ModelNotFound, `revision "v2"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prism.Pull(t.Context(), tc.repo, append(base, tc.opts...)...)
			if errcode.Of(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%v (code %q), want %s saying %q", err, errcode.Of(err), tc.code, tc.says)
			}
		})
	}
	_, err := prism.Pull(t.Context(), "onnx-community/Nope", base...)
	var nf *prism.HubNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("want *prism.HubNotFoundError, have %v", err)
	}
}
