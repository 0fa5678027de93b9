package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/hub"
)

// Option configures Open.
type Option func(*config)

type config struct {
	schema string
	conns  int
}

// WithSchema keeps the store's tables in schema (created if missing)
// instead of the connection's default search_path.
func WithSchema(schema string) Option { return func(c *config) { c.schema = schema } }

// WithMaxConns sets the size of the connection pool (default 8), not
// counting the one LISTEN connection.
func WithMaxConns(n int) Option { return func(c *config) { c.conns = n } }

// Store is the PostgreSQL store. Create it with Open.
type Store struct {
	pool    *pool
	channel string
	hub     hub.Hub
	stop    context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

var _ signals.Store = (*Store)(nil)

// Open connects to the database at url (a libpq URL or DSN), applies the
// schema and starts the LISTEN connection that wakes lifecycle waiters.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg := config{conns: 8}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.conns <= 0 {
		return nil, signals.Errorf(signals.CodeInvalidArgument, "open", "the pool needs at least one connection")
	}
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, &signals.Error{Code: signals.CodeInvalidArgument, Op: "open", Msg: "bad database url", Err: err}
	}
	channel := "prism_signals"
	if cfg.schema != "" {
		if err := createSchema(ctx, cc, cfg.schema); err != nil {
			return nil, err
		}
		cc.RuntimeParams["search_path"] = pgx.Identifier{cfg.schema}.Sanitize()
		channel += ":" + cfg.schema
	}
	s := &Store{pool: newPool(cc, cfg.conns), channel: channel, done: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		s.pool.close()
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	ready := make(chan error, 1)
	go s.listen(lctx, cc, ready)
	if err := <-ready; err != nil {
		cancel()
		<-s.done
		s.pool.close()
		return nil, signals.StoreError("listen", err)
	}
	return s, nil
}

func createSchema(ctx context.Context, cc *pgx.ConnConfig, schema string) error {
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return signals.StoreError("open", err)
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	if err != nil {
		// Two processes creating the schema at once: the loser sees a
		// unique violation although the schema now exists.
		var exists bool
		if c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists) == nil && exists {
			return nil
		}
	}
	return signals.StoreError("open", err)
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS signals (
	seq             bigserial   PRIMARY KEY,
	id              text        NOT NULL UNIQUE,
	from_identity   text        NOT NULL,
	to_identity     text        NOT NULL,
	type            text        NOT NULL,
	payload         text        NOT NULL,
	idempotency_key text,
	created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
	delivered_at    timestamptz,
	delivery_method text,
	delivery_id     text,
	lease_until     timestamptz,
	attempts        integer     NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS signals_idempotency ON signals (from_identity, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS signals_inbox ON signals (to_identity, seq) WHERE delivered_at IS NULL;
CREATE INDEX IF NOT EXISTS signals_delivery ON signals (delivery_id) WHERE delivered_at IS NULL;
CREATE TABLE IF NOT EXISTS signal_sessions (
	id         text        PRIMARY KEY,
	identity   text        NOT NULL,
	started_at timestamptz NOT NULL,
	ended_at   timestamptz
);
CREATE TABLE IF NOT EXISTS executions (
	seq         bigserial   PRIMARY KEY,
	id          text        NOT NULL UNIQUE,
	parent      text,
	root        text        NOT NULL,
	session     text        NOT NULL DEFAULT '',
	executor    text        NOT NULL,
	kind        text        NOT NULL DEFAULT '',
	notify      boolean     NOT NULL,
	state       text        NOT NULL,
	detail      text        NOT NULL DEFAULT '',
	created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
	finished_at timestamptz,
	notified_at timestamptz
);
CREATE INDEX IF NOT EXISTS executions_root ON executions (root, seq);
CREATE INDEX IF NOT EXISTS executions_session_roots ON executions (session, seq) WHERE parent IS NULL;
`

func (s *Store) migrate(ctx context.Context) error {
	err := s.pool.tx(ctx, func(tx pgx.Tx) error {
		// Serialise concurrent migrations (several processes starting).
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", s.channel); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schemaSQL)
		return err
	})
	return signals.StoreError("migrate", err)
}

// listen holds the LISTEN connection: every notification wakes the
// watchers of its key. When the connection fails it wakes everyone (they
// re-read) and reconnects until the store closes.
func (s *Store) listen(ctx context.Context, cc *pgx.ConnConfig, ready chan<- error) {
	defer close(s.done)
	backoff := 10 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, cc, func() {
			if first {
				first = false
				ready <- nil
			}
			backoff = 10 * time.Millisecond
		})
		if first {
			ready <- err
			return
		}
		s.hub.NotifyAll()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, cc *pgx.ConnConfig, up func()) error {
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return err
	}
	up()
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.hub.Notify(n.Payload)
	}
}

// notify queues a wake for key, sent when tx commits.
func (s *Store) notify(ctx context.Context, tx pgx.Tx, key string) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.channel, key)
	return err
}

// Watch implements [signals.Store].
func (s *Store) Watch(key string) (<-chan struct{}, func()) { return s.hub.Watch(key) }

// Close stops the LISTEN connection and closes the pool.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.stop()
		<-s.done
		s.pool.close()
	})
	return nil
}

// DropSchema drops schema and everything in it; tests use it to clean up
// after WithSchema.
func DropSchema(ctx context.Context, url, schema string) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	if err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

var errNoRows = pgx.ErrNoRows

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }
