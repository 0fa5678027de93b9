package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prism-local/prism/signals"
)

const signalColumns = `seq, id, from_identity, to_identity, type, payload, idempotency_key, created_at,
	delivered_at, delivery_method, delivery_id, lease_until, attempts`

type row interface{ Scan(...any) error }

func scanSignal(r row) (int64, signals.Signal, error) {
	var (
		seq                   int64
		s                     signals.Signal
		payload               string
		key, method, delivery sql.NullString
		created               int64
		delivered, lease      sql.NullInt64
	)
	err := r.Scan(&seq, &s.ID, &s.From, &s.To, &s.Type, &payload, &key, &created, &delivered, &method, &delivery, &lease, &s.Attempts)
	if err != nil {
		return 0, s, err
	}
	s.Payload = json.RawMessage(payload)
	s.IdempotencyKey = key.String
	s.CreatedAt = *fromMicros(sql.NullInt64{Int64: created, Valid: true})
	s.DeliveredAt = fromMicros(delivered)
	s.DeliveryMethod = signals.Method(method.String)
	s.DeliveryID = delivery.String
	s.LeaseUntil = fromMicros(lease)
	return seq, s, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Insert implements [signals.Store]. The batch goes to SQLite as one JSON
// array bound to one prepared INSERT … SELECT FROM json_each, so a batch of
// any size costs one statement execution instead of one per message. Only
// messages whose idempotency key was already used are read back by key.
func (s *Store) Insert(ctx context.Context, msgs []signals.Message) ([]signals.Signal, error) {
	batch := make([][6]*string, len(msgs))
	position := make(map[string]int, len(msgs))
	for i, m := range msgs {
		id, from, to, typ, payload := signals.NewID(), m.From, m.To, m.Type, string(m.Payload)
		var key *string
		if m.IdempotencyKey != "" {
			key = &m.IdempotencyKey
		}
		batch[i] = [6]*string{&id, &from, &to, &typ, &payload, key}
		position[id] = i
	}
	list, err := json.Marshal(batch)
	if err != nil {
		return nil, signals.StoreError("send", err)
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, signals.StoreError("send", err)
	}
	defer func() { _ = tx.Rollback() }()
	out := make([]signals.Signal, len(msgs))
	found := make([]bool, len(msgs))
	at := micros(now())
	if jsonExact(msgs) {
		rows, err := tx.StmtContext(ctx, s.insert).QueryContext(ctx, at, string(list))
		if err != nil {
			return nil, signals.StoreError("send", err)
		}
		for rows.Next() {
			_, sig, err := scanSignal(rows)
			if err != nil {
				rows.Close()
				return nil, signals.StoreError("send", err)
			}
			if i, ok := position[sig.ID]; ok {
				out[i], found[i] = sig, true
			}
		}
		if err := errors.Join(rows.Close(), rows.Err()); err != nil {
			return nil, signals.StoreError("send", err)
		}
	} else {
		one := tx.StmtContext(ctx, s.insertOne)
		for i, m := range msgs {
			_, sig, err := scanSignal(one.QueryRowContext(ctx, *batch[i][0], m.From, m.To, m.Type, string(m.Payload), nullable(m.IdempotencyKey), at))
			if err == sql.ErrNoRows {
				continue // key already used: read back below
			}
			if err != nil {
				return nil, signals.StoreError("send", err)
			}
			out[i], found[i] = sig, true
		}
	}
	for i, ok := range found {
		if ok {
			continue
		}
		_, sig, err := scanSignal(tx.StmtContext(ctx, s.byKey).QueryRowContext(ctx, msgs[i].From, msgs[i].IdempotencyKey))
		if err != nil {
			return nil, signals.StoreError("send", err)
		}
		out[i] = sig
	}
	if err := tx.Commit(); err != nil {
		return nil, signals.StoreError("send", err)
	}
	for _, m := range msgs {
		s.hub.Notify(signals.InboxKey(m.To))
	}
	return out, nil
}

// jsonExact reports whether every text of msgs survives a trip through a
// JSON string unchanged: valid UTF-8 without NUL. Other batches take the
// row-by-row statement, which binds the bytes as they are.
func jsonExact(msgs []signals.Message) bool {
	ok := func(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }
	for _, m := range msgs {
		if !ok(m.From) || !ok(m.To) || !ok(m.Type) || !ok(string(m.Payload)) || !ok(m.IdempotencyKey) {
			return false
		}
	}
	return true
}

const (
	insertOneSQL = `INSERT INTO signals (id, from_identity, to_identity, type, payload, idempotency_key, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (from_identity, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING ` + signalColumns
	// insertSQL queues a batch given as a JSON array of
	// [id, from, to, type, payload, key-or-null] arrays; ORDER BY key
	// hands out seq in the batch's order. (WHERE true keeps the upsert's
	// ON from parsing as a join constraint.)
	insertSQL = `INSERT INTO signals (id, from_identity, to_identity, type, payload, idempotency_key, created_at)
		SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, ?
		FROM json_each(?) WHERE true ORDER BY key
		ON CONFLICT (from_identity, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING ` + signalColumns
	byKeySQL = `SELECT ` + signalColumns + ` FROM signals WHERE from_identity = ? AND idempotency_key = ?`
	claimSQL = `UPDATE signals
		SET delivery_id = ?, delivery_method = ?, attempts = attempts + 1, delivered_at = ?, lease_until = ?
		WHERE seq IN (
			SELECT seq FROM signals
			WHERE to_identity = ? AND delivered_at IS NULL AND (lease_until IS NULL OR lease_until <= ?)
			ORDER BY seq LIMIT ?)
		RETURNING ` + signalColumns
	// confirmSQL finds the held rows through signals_held; the unary + on
	// to_identity keeps the planner (which has no statistics) from walking
	// the identity's whole undelivered backlog in signals_inbox instead.
	confirmSQL = `UPDATE signals SET delivered_at = ?, lease_until = NULL
		WHERE delivered_at IS NULL AND delivery_id IS NOT NULL AND delivery_id IN (SELECT value FROM json_each(?)) AND +to_identity = ?`
	peekSQL = `SELECT EXISTS (SELECT 1 FROM signals
		WHERE to_identity = ? AND delivered_at IS NULL AND (lease_until IS NULL OR lease_until <= ?))`
)

// Claim implements [signals.Store]. A read on the shared-lock side first
// skips the write transaction when nothing is claimable, so an empty drain
// (the common piggyback case) never waits for a writer. A signal queued after
// that read is claimed by the next drain.
func (s *Store) Claim(ctx context.Context, c signals.Claim) ([]signals.Signal, error) {
	if len(c.Confirm) == 0 {
		var claimable bool
		if err := s.peek.QueryRowContext(ctx, c.Identity, micros(now())).Scan(&claimable); err != nil {
			return nil, signals.StoreError("drain", err)
		}
		if !claimable {
			return nil, nil
		}
	}
	tx, err := s.writer.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return nil, signals.StoreError("drain", err)
	}
	defer func() { _ = tx.Rollback() }()
	t := now()
	if len(c.Confirm) > 0 {
		list, _ := json.Marshal(c.Confirm)
		if _, err := tx.StmtContext(ctx, s.confirm).ExecContext(ctx, micros(t), string(list), c.Identity); err != nil {
			return nil, signals.StoreError("drain", err)
		}
	}
	var delivered, lease any
	if c.Mode == signals.MarkOnDrain {
		delivered = micros(t)
	} else {
		lease = micros(t.Add(c.Lease))
	}
	rows, err := tx.StmtContext(ctx, s.claim).QueryContext(ctx, c.DeliveryID, string(c.Method), delivered, lease, c.Identity, micros(t), c.Limit)
	if err != nil {
		return nil, signals.StoreError("drain", err)
	}
	type claimed struct {
		seq int64
		sig signals.Signal
	}
	var got []claimed
	for rows.Next() {
		seq, sig, err := scanSignal(rows)
		if err != nil {
			rows.Close()
			return nil, signals.StoreError("drain", err)
		}
		got = append(got, claimed{seq, sig})
	}
	if err := rows.Close(); err != nil {
		return nil, signals.StoreError("drain", err)
	}
	if err := rows.Err(); err != nil {
		return nil, signals.StoreError("drain", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, signals.StoreError("drain", err)
	}
	slices.SortFunc(got, func(a, b claimed) int { return int(a.seq - b.seq) })
	out := make([]signals.Signal, len(got))
	for i, g := range got {
		out[i] = g.sig
	}
	return out, nil
}

// Confirm implements [signals.Store].
func (s *Store) Confirm(ctx context.Context, identity string, deliveryIDs []string) (int, error) {
	list, _ := json.Marshal(deliveryIDs)
	res, err := s.confirm.ExecContext(ctx, micros(now()), string(list), identity)
	if err != nil {
		return 0, signals.StoreError("ack", err)
	}
	n, err := res.RowsAffected()
	return int(n), signals.StoreError("ack", err)
}

// Depth implements [signals.Store].
func (s *Store) Depth(ctx context.Context, identity string) (signals.Depth, error) {
	d := signals.Depth{Identity: identity}
	err := s.reader.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN lease_until > ? THEN 0 ELSE 1 END), 0),
			COALESCE(SUM(CASE WHEN lease_until > ? THEN 1 ELSE 0 END), 0)
		FROM signals WHERE to_identity = ? AND delivered_at IS NULL`,
		micros(now()), micros(now()), identity).Scan(&d.Pending, &d.Leased)
	return d, signals.StoreError("depth", err)
}

// Signal implements [signals.Store].
func (s *Store) Signal(ctx context.Context, id string) (signals.Signal, error) {
	_, sig, err := scanSignal(s.reader.QueryRowContext(ctx, `SELECT `+signalColumns+` FROM signals WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return sig, signals.Errorf(signals.CodeNotFound, "get", "no signal %q", id)
	}
	return sig, signals.StoreError("get", err)
}

// CreateSession implements [signals.Store].
func (s *Store) CreateSession(ctx context.Context, sess signals.Session) error {
	res, err := s.writer.ExecContext(ctx, `INSERT INTO signal_sessions (id, identity, started_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		sess.ID, sess.Identity, micros(sess.StartedAt))
	if err != nil {
		return signals.StoreError("start", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return signals.Errorf(signals.CodeAlreadyExists, "start", "session %q exists", sess.ID)
	}
	return nil
}

// Session implements [signals.Store].
func (s *Store) Session(ctx context.Context, id string) (signals.Session, error) {
	var (
		sess    signals.Session
		started int64
		ended   sql.NullInt64
	)
	err := s.reader.QueryRowContext(ctx, `SELECT id, identity, started_at, ended_at FROM signal_sessions WHERE id = ?`, id).
		Scan(&sess.ID, &sess.Identity, &started, &ended)
	if err == sql.ErrNoRows {
		return sess, signals.Errorf(signals.CodeNotFound, "session", "no session %q", id)
	}
	if err != nil {
		return sess, signals.StoreError("session", err)
	}
	sess.StartedAt = time.UnixMicro(started).UTC()
	sess.EndedAt = fromMicros(ended)
	return sess, nil
}

// EndSession implements [signals.Store].
func (s *Store) EndSession(ctx context.Context, id string) error {
	res, err := s.writer.ExecContext(ctx, `UPDATE signal_sessions SET ended_at = COALESCE(ended_at, ?) WHERE id = ?`, micros(now()), id)
	if err != nil {
		return signals.StoreError("wrap", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return signals.Errorf(signals.CodeNotFound, "wrap", "no session %q", id)
	}
	return nil
}
