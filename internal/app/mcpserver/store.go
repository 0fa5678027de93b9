package mcpserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/postgres"
	"github.com/prism-local/prism/signals/sqlite"
)

// OpenStore opens the signals store PRISM_SIGNALS_DB names: PostgreSQL for
// a postgres:// or postgresql:// URL, else a SQLite file (its folder is
// created).
func OpenStore(ctx context.Context, dsn string) (signals.Store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("signals store (PRISM_SIGNALS_DB, PostgreSQL): %w", err)
		}
		return st, nil
	}
	if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
		return nil, fmt.Errorf("signals store (PRISM_SIGNALS_DB): %w", err)
	}
	st, err := sqlite.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("signals store (PRISM_SIGNALS_DB=%s): %w", dsn, err)
	}
	return st, nil
}
