package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/internal/app/mcpserver"
	"github.com/prism-local/prism/signals"
)

// TestOpenStore: a file path opens SQLite (its folder made), a postgres://
// URL PostgreSQL (PRISM_TEST_POSTGRES_URL; CI sets it).
func TestOpenStore(t *testing.T) {
	dsns := map[string]string{"sqlite": filepath.Join(t.TempDir(), "new", "dir", "signals.db")}
	if url := os.Getenv("PRISM_TEST_POSTGRES_URL"); url != "" {
		dsns["postgres"] = url
	} else if os.Getenv("CI") != "" {
		t.Error("PRISM_TEST_POSTGRES_URL is not set in CI")
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			st, err := mcpserver.OpenStore(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			q := signals.NewQueue(st)
			to := "open-store-" + signals.NewID()
			if _, err := q.Send(t.Context(), signals.Message{From: "a", To: to, Type: "t"}); err != nil {
				t.Fatal(err)
			}
			if d, err := q.Depth(t.Context(), to); err != nil || d.Pending != 1 {
				t.Errorf("depth %+v, %v", d, err)
			}
		})
	}
	if _, err := mcpserver.OpenStore(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"); err == nil {
		t.Error("an unreachable PostgreSQL opened")
	}
}
