package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/hub"
)

// Option configures New and Open.
type Option func(*config)

type config struct {
	schema   string
	conns    int
	connsSet bool
}

// WithSchema keeps the store's tables in schema (created if missing)
// instead of the connection's default search_path. Every statement names
// the schema explicitly, so the pool's own search_path is left untouched.
func WithSchema(schema string) Option { return func(c *config) { c.schema = schema } }

// WithMaxConns sets the size of the pool Open creates (default 8, or
// pool_max_conns from the URL), not counting the one LISTEN connection.
// New rejects it: a caller's pool keeps the size its owner gave it.
func WithMaxConns(n int) Option { return func(c *config) { c.conns, c.connsSet = n, true } }

// Store is the PostgreSQL store. Create it with New (on a caller's pool)
// or Open (on a pool of its own).
type Store struct {
	pool    *pgxpool.Pool
	owned   bool // the store created pool and closes it
	q       queries
	channel string
	hub     hub.Hub
	stop    context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

var _ signals.Store = (*Store)(nil)

// New builds the store on pool, which stays the caller's: Close leaves it
// open, and the caller closes it after the store. New applies the schema
// and takes one connection out of pool for LISTEN (see listenOnce); that
// connection no longer counts against the pool's size and is closed by
// Close.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, signals.Errorf(signals.CodeInvalidArgument, "open", "no connection pool")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.connsSet {
		return nil, signals.Errorf(signals.CodeInvalidArgument, "open", "WithMaxConns applies only to Open; size the caller's pool in its own config")
	}
	return start(ctx, pool, false, cfg.schema)
}

// Open creates a pgx pool for url (a libpq URL or DSN; pgxpool's pool_*
// parameters apply), builds the store on it as New does, and closes the
// pool on Close.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, signals.NewError(signals.CodeInvalidArgument, "open", "bad database url", err)
	}
	switch {
	case cfg.connsSet && cfg.conns <= 0:
		return nil, signals.Errorf(signals.CodeInvalidArgument, "open", "the pool needs at least one connection")
	case cfg.connsSet:
		pc.MaxConns = int32(min(cfg.conns, math.MaxInt32))
	case !strings.Contains(url, "pool_max_conns"):
		pc.MaxConns = 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, signals.StoreError("open", err)
	}
	s, err := start(ctx, pool, true, cfg.schema)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// start migrates and starts the listener; on error it leaves pool as it
// found it (the caller of start closes an owned pool).
func start(ctx context.Context, pool *pgxpool.Pool, owned bool, schema string) (*Store, error) {
	channel := "prism_signals"
	if schema != "" {
		channel += ":" + schema
	}
	s := &Store{pool: pool, owned: owned, q: newQueries(schema), channel: channel, done: make(chan struct{})}
	if err := s.migrate(ctx, schema); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	ready := make(chan error, 1)
	go s.listen(lctx, ready)
	if err := <-ready; err != nil {
		cancel()
		<-s.done
		return nil, signals.StoreError("listen", err)
	}
	return s, nil
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS {signals} (
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
CREATE UNIQUE INDEX IF NOT EXISTS signals_idempotency ON {signals} (from_identity, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS signals_inbox ON {signals} (to_identity, seq) WHERE delivered_at IS NULL;
-- held: only claimed, unconfirmed rows, so a send does not touch it (an
-- earlier version indexed every undelivered row as signals_delivery).
DROP INDEX IF EXISTS {signals_delivery};
CREATE INDEX IF NOT EXISTS signals_held ON {signals} (delivery_id) WHERE delivered_at IS NULL AND delivery_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS {sessions} (
	id         text        PRIMARY KEY,
	identity   text        NOT NULL,
	started_at timestamptz NOT NULL,
	ended_at   timestamptz
);
CREATE TABLE IF NOT EXISTS {executions} (
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
CREATE INDEX IF NOT EXISTS executions_root ON {executions} (root, seq);
CREATE INDEX IF NOT EXISTS executions_session_roots ON {executions} (session, seq) WHERE parent IS NULL;
`

func (s *Store) migrate(ctx context.Context, schema string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Serialise concurrent migrations (several processes starting), so
		// concurrent first opens never race on creating the schema either.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", s.channel); err != nil {
			return err
		}
		if schema != "" {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, s.q.schema)
		return err
	})
	return signals.StoreError("migrate", err)
}

// listen holds the LISTEN connection: every notification wakes the
// watchers of its key. When the connection fails it wakes everyone (they
// re-read) and reconnects until the store closes.
func (s *Store) listen(ctx context.Context, ready chan<- error) {
	defer close(s.done)
	backoff := 10 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
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

// listenOnce LISTENs on one dedicated connection until it fails or ctx
// ends, then closes it.
//
// The connection is acquired from the pool and hijacked rather than dialled
// separately from the pool's ConnConfig: that way it goes through the
// pool's BeforeConnect/AfterConnect hooks (rotating credentials, registered
// types) exactly like the pool's own connections. Hijacking takes it out of
// the pool for good, so it neither holds one of the pool's slots for the
// store's lifetime nor ever goes back to other users still LISTENing; the
// store closes it itself.
func (s *Store) listenOnce(ctx context.Context, up func()) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	c := pc.Hijack()
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

// Close stops the listener and closes its connection. It closes the pool
// only if Open created it; a pool given to New stays open for its owner.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.stop()
		<-s.done
		if s.owned {
			s.pool.Close()
		}
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
