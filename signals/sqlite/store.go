package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/hub"
)

// Option configures Open.
type Option func(*config)

type config struct {
	busyTimeout time.Duration
	poll        time.Duration
	readers     int
}

// WithBusyTimeout sets how long a write waits for another process's write
// transaction before failing (default 10 s).
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busyTimeout = d } }

// WithPollInterval sets how often waiters look for commits by other
// processes (default 2 ms). It bounds cross-process wake latency; the poll
// runs only while someone waits.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// WithReaders sets the size of the read connection pool (default 4).
func WithReaders(n int) Option { return func(c *config) { c.readers = n } }

// Store is the SQLite store. Create it with Open.
type Store struct {
	path   string
	writer *sql.DB // one connection: this process's writes queue here
	reader *sql.DB
	hub    hub.Hub
	poll   time.Duration
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	insert, insertOne, byKey, claim, confirm, peek *sql.Stmt
}

var _ signals.Store = (*Store)(nil)

// Open opens (creating if needed) the signals database at path and applies
// the schema. Several processes may open the same path.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{busyTimeout: 10 * time.Second, poll: 2 * time.Millisecond, readers: 4}
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" {
		return nil, signals.Errorf(signals.CodeInvalidArgument, "open", "a database path is required")
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	base := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	writer, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, signals.StoreError("open", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	reader, err := sql.Open("sqlite", base)
	if err != nil {
		_ = writer.Close()
		return nil, signals.StoreError("open", err)
	}
	reader.SetMaxOpenConns(cfg.readers + 1) // +1 for the change poller
	reader.SetMaxIdleConns(cfg.readers + 1)
	s := &Store{path: path, writer: writer, reader: reader, poll: cfg.poll, stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		_ = writer.Close()
		_ = reader.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = writer.Close()
		_ = reader.Close()
		return nil, err
	}
	go s.watchCommits()
	return s, nil
}

const schema = `
CREATE TABLE IF NOT EXISTS signals (
	seq             INTEGER PRIMARY KEY, -- rowid: rows are never deleted, so it only grows
	id              TEXT    NOT NULL UNIQUE,
	from_identity   TEXT    NOT NULL,
	to_identity     TEXT    NOT NULL,
	type            TEXT    NOT NULL,
	payload         TEXT    NOT NULL,
	idempotency_key TEXT,
	created_at      INTEGER NOT NULL,
	delivered_at    INTEGER,
	delivery_method TEXT,
	delivery_id     TEXT,
	lease_until     INTEGER,
	attempts        INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS signals_idempotency ON signals (from_identity, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS signals_inbox ON signals (to_identity, seq) WHERE delivered_at IS NULL;
-- held: only claimed, unconfirmed rows, so a send does not touch it (an
-- earlier version indexed every undelivered row as signals_delivery).
DROP INDEX IF EXISTS signals_delivery;
CREATE INDEX IF NOT EXISTS signals_held ON signals (delivery_id) WHERE delivered_at IS NULL AND delivery_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS signal_sessions (
	id         TEXT    PRIMARY KEY,
	identity   TEXT    NOT NULL,
	started_at INTEGER NOT NULL,
	ended_at   INTEGER
);
CREATE TABLE IF NOT EXISTS executions (
	seq         INTEGER PRIMARY KEY,
	id          TEXT    NOT NULL UNIQUE,
	parent      TEXT,
	root        TEXT    NOT NULL,
	session     TEXT    NOT NULL DEFAULT '',
	executor    TEXT    NOT NULL,
	kind        TEXT    NOT NULL DEFAULT '',
	notify      INTEGER NOT NULL,
	state       TEXT    NOT NULL,
	detail      TEXT    NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	finished_at INTEGER,
	notified_at INTEGER
);
CREATE INDEX IF NOT EXISTS executions_root ON executions (root, seq);
CREATE INDEX IF NOT EXISTS executions_session_roots ON executions (session, seq) WHERE parent IS NULL;
`

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return signals.StoreError("migrate", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return signals.StoreError("migrate", err)
	}
	return signals.StoreError("migrate", tx.Commit())
}

func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		db   *sql.DB
		dst  **sql.Stmt
		text string
	}{
		{s.writer, &s.insert, insertSQL},
		{s.writer, &s.insertOne, insertOneSQL},
		{s.writer, &s.byKey, byKeySQL},
		{s.writer, &s.claim, claimSQL},
		{s.writer, &s.confirm, confirmSQL},
		{s.reader, &s.peek, peekSQL},
	} {
		st, err := p.db.PrepareContext(ctx, p.text)
		if err != nil {
			return signals.StoreError("prepare", err)
		}
		*p.dst = st
	}
	return nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close stops the change poller and closes the database.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		for _, st := range []*sql.Stmt{s.insert, s.insertOne, s.byKey, s.claim, s.confirm, s.peek} {
			_ = st.Close()
		}
		err = errors.Join(s.writer.Close(), s.reader.Close())
	})
	return err
}

// Watch implements [signals.Store].
func (s *Store) Watch(key string) (<-chan struct{}, func()) { return s.hub.Watch(key) }

// watchCommits wakes every watcher when another connection (another
// process) committed, as PRAGMA data_version reports. It queries only while
// someone watches.
func (s *Store) watchCommits() {
	defer close(s.done)
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	last := int64(-1)
	for {
		select {
		case <-s.stop:
			return
		case <-ticker.C:
		}
		if s.hub.Count() == 0 {
			continue
		}
		if conn == nil {
			c, err := s.reader.Conn(context.Background())
			if err != nil {
				continue
			}
			conn = c
		}
		var v int64
		if err := conn.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&v); err != nil {
			_ = conn.Close()
			conn, last = nil, -1
			s.hub.NotifyAll() // cannot tell: let waiters re-read
			continue
		}
		// A new baseline may already include a commit a waiter subscribed
		// for: wake everyone to re-read rather than miss it.
		if v != last {
			s.hub.NotifyAll()
		}
		last = v
	}
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
