package main

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
)

// TestGenerateThroughReferenceServer: with a reference server answering
// at PRISM_BASE_URL, generate and status go there, with no warning.
func TestGenerateThroughReferenceServer(t *testing.T) {
	env := environ(t, false)
	cat, err := catalog.Scan(t.Context(), catalog.Sources{ModelsDirs: []string{models.Path(t)}})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := engine.NewManager(func(ctx context.Context, key string) (*engine.Engine, error) {
		dir, _ := server.SplitKey(key)
		return prism.Open(ctx, dir, prism.WithEnv(env))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	h, err := server.New(server.Config{Manager: mgr, Catalog: cat, Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()

	p := start(t, append(env, "PRISM_BASE_URL="+hs.URL+"/v1"))
	p.initialize(t)
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate","arguments":{"prompt":"hi","model":"think"}}}`)
	sc := structured(t, p.next(t))
	if sc["backend"] != "server" || len(sc["warnings"].([]any)) != 0 || sc["reasoning"] != "plan" {
		t.Errorf("generate through the server: %v", sc)
	}
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`)
	if sc := structured(t, p.next(t)); sc["backend"] != "server" || sc["resident_model"] != "think" || sc["device"] != "cpu" {
		t.Errorf("status through the server: %v", sc)
	}
}

func structured(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil || res["isError"] == true {
		t.Fatalf("not a structured result: %v", m)
	}
	return sc
}
