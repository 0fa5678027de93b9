package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/prism-local/prism/signals"
)

const signalColumns = `seq, id, from_identity, to_identity, type, payload, idempotency_key, created_at,
	delivered_at, delivery_method, delivery_id, lease_until, attempts`

func scanSignal(r pgx.Row) (int64, signals.Signal, error) {
	var (
		seq                   int64
		s                     signals.Signal
		payload               string
		key, method, delivery *string
	)
	err := r.Scan(&seq, &s.ID, &s.From, &s.To, &s.Type, &payload, &key, &s.CreatedAt, &s.DeliveredAt, &method, &delivery, &s.LeaseUntil, &s.Attempts)
	if err != nil {
		return 0, s, err
	}
	s.Payload = json.RawMessage(payload)
	if key != nil {
		s.IdempotencyKey = *key
	}
	if method != nil {
		s.DeliveryMethod = signals.Method(*method)
	}
	if delivery != nil {
		s.DeliveryID = *delivery
	}
	s.CreatedAt = s.CreatedAt.UTC()
	s.DeliveredAt = utc(s.DeliveredAt)
	s.LeaseUntil = utc(s.LeaseUntil)
	return seq, s, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

const (
	// insertSQL queues a whole batch; ORDER BY ord hands out seq in the
	// batch's order. It returns only what the database chose (created_at):
	// every other column of a new row is what was sent, or still unset.
	insertSQL = `INSERT INTO {signals} (id, from_identity, to_identity, type, payload, idempotency_key)
		SELECT m.id, m.f, m.t, m.ty, m.p, m.k
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
			WITH ORDINALITY AS m(id, f, t, ty, p, k, ord)
		ORDER BY m.ord
		ON CONFLICT (from_identity, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id, created_at`
	byKeySQL = `SELECT ` + signalColumns + ` FROM {signals} WHERE from_identity = $1 AND idempotency_key = $2`
	// claimSQL takes the oldest claimable rows, skipping rows another
	// drainer has locked, and stamps them in the same statement. The
	// uncorrelated (SELECT clock_timestamp()) runs once per statement, so
	// every signal of one drain gets the same delivered_at or lease_until
	// (a bare clock_timestamp() would differ row by row, and the lease of
	// the first row would run out before the others').
	claimSQL = `UPDATE {signals} AS s
		SET delivery_id = $3, delivery_method = $4, attempts = s.attempts + 1,
			delivered_at = CASE WHEN $5 THEN (SELECT clock_timestamp()) END,
			lease_until = CASE WHEN $5 THEN NULL ELSE (SELECT clock_timestamp()) + $6 * interval '1 microsecond' END
		FROM (
			SELECT seq FROM {signals}
			WHERE to_identity = $1 AND delivered_at IS NULL AND (lease_until IS NULL OR lease_until <= clock_timestamp())
			ORDER BY seq LIMIT $2
			FOR UPDATE SKIP LOCKED) AS picked
		WHERE s.seq = picked.seq
		RETURNING s.seq, s.id, s.from_identity, s.to_identity, s.type, s.payload, s.idempotency_key, s.created_at,
			s.delivered_at, s.delivery_method, s.delivery_id, s.lease_until, s.attempts`
	// confirmSQL finds its rows through signals_held only. The identity
	// check is written as to_identity || '' (equal to to_identity, which is
	// never NULL) so that signals_inbox cannot serve it: without statistics
	// (a new table, one analysed while empty) the planner rates both indexes
	// alike and may pick signals_inbox, and every ack then walks the
	// identity's whole undelivered backlog.
	confirmSQL = `UPDATE {signals} SET delivered_at = clock_timestamp(), lease_until = NULL
		WHERE delivery_id = ANY($2) AND delivery_id IS NOT NULL AND delivered_at IS NULL AND to_identity || '' = $1`
	depthSQL = `SELECT
			count(*) FILTER (WHERE lease_until IS NULL OR lease_until <= clock_timestamp()),
			count(*) FILTER (WHERE lease_until > clock_timestamp())
		FROM {signals} WHERE to_identity = $1 AND delivered_at IS NULL`
	signalSQL        = `SELECT ` + signalColumns + ` FROM {signals} WHERE id = $1`
	createSessionSQL = `INSERT INTO {sessions} (id, identity, started_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`
	sessionSQL       = `SELECT id, identity, started_at, ended_at FROM {sessions} WHERE id = $1`
	endSessionSQL    = `UPDATE {sessions} SET ended_at = COALESCE(ended_at, clock_timestamp()) WHERE id = $1`
)

// Insert implements [signals.Store]. The whole batch is one INSERT over
// unnest'ed arrays (one statement, one round trip, its own transaction);
// only messages whose idempotency key was already used are read back
// afterwards, by key. The existing row of such a key was committed before
// the INSERT returned (ON CONFLICT waits for it) and is never changed by a
// later send, so reading it outside the INSERT's transaction is exact.
func (s *Store) Insert(ctx context.Context, msgs []signals.Message) ([]signals.Signal, error) {
	var (
		ids      = make([]string, len(msgs))
		from     = make([]string, len(msgs))
		to       = make([]string, len(msgs))
		typ      = make([]string, len(msgs))
		payload  = make([]string, len(msgs))
		keys     = make([]*string, len(msgs))
		position = make(map[string]int, len(msgs))
	)
	for i, m := range msgs {
		ids[i], from[i], to[i], typ[i], payload[i], keys[i] = signals.NewID(), m.From, m.To, m.Type, string(m.Payload), nullable(m.IdempotencyKey)
		position[ids[i]] = i
	}
	out := make([]signals.Signal, len(msgs))
	found := make([]bool, len(msgs))
	err := func() error {
		rows, err := s.pool.Query(ctx, s.q.insert, ids, from, to, typ, payload, keys)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id      string
				created time.Time
			)
			if err := rows.Scan(&id, &created); err != nil {
				return err
			}
			if i, ok := position[id]; ok {
				m := msgs[i]
				out[i] = signals.Signal{ID: id, From: m.From, To: m.To, Type: m.Type,
					Payload: json.RawMessage(payload[i]), IdempotencyKey: m.IdempotencyKey, CreatedAt: created.UTC()}
				found[i] = true
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for i, ok := range found {
			if ok {
				continue
			}
			_, sig, err := scanSignal(s.pool.QueryRow(ctx, s.q.byKey, msgs[i].From, msgs[i].IdempotencyKey))
			if err != nil {
				return err
			}
			out[i] = sig
		}
		return nil
	}()
	if err != nil {
		return nil, signals.StoreError("send", err)
	}
	for _, m := range msgs {
		s.hub.Notify(signals.InboxKey(m.To))
	}
	return out, nil
}

// relaxCommitSQL turns off the wait for the WAL flush at the commit of
// the transaction it runs in, and only there (set_config's is_local, the
// function form of SET LOCAL, which also works in the implicit transaction
// of a pipelined batch). Lease-mode claims and confirmations use it; see
// relaxed.
const relaxCommitSQL = `SELECT set_config('synchronous_commit', 'off', true)`

// relaxed reports whether a claim may commit without waiting for its WAL
// flush. In lease-and-ack mode it may: a server crash can undo only the
// last few hundred milliseconds of such commits (never a send, which keeps
// synchronous commit, and never half a transaction, because the WAL is
// replayed in order), and an undone lease or confirmation leaves its
// signals undelivered, so they are delivered again with the same signal id
// — the mode's documented at-least-once guarantee, made exact by
// de-duplication. In mark-on-drain mode it may not: an undone mark would
// hand out again signals the agent may already have, a duplicate the mode
// promises never to produce.
func relaxed(c signals.Claim) bool { return c.Mode == signals.LeaseAndAck }

// Claim implements [signals.Store] with FOR UPDATE SKIP LOCKED and
// UPDATE … RETURNING in one statement. The confirmation of c.Confirm, the
// claim and, in lease mode, the relaxed commit go to the server as one
// pipelined batch: one round trip and one implicit transaction, so the
// confirmation and the claim commit together.
func (s *Store) Claim(ctx context.Context, c signals.Claim) ([]signals.Signal, error) {
	b := &pgx.Batch{}
	if relaxed(c) {
		b.Queue(relaxCommitSQL)
	}
	if len(c.Confirm) > 0 {
		b.Queue(s.q.confirm, c.Identity, c.Confirm)
	}
	b.Queue(s.q.claim, c.Identity, c.Limit, c.DeliveryID, string(c.Method), c.Mode == signals.MarkOnDrain, c.Lease.Microseconds())
	got, err := s.runClaim(ctx, b)
	if err != nil {
		return nil, signals.StoreError("drain", err)
	}
	slices.SortFunc(got, func(a, b claimed) int { return int(a.seq - b.seq) })
	out := make([]signals.Signal, len(got))
	for i, g := range got {
		out[i] = g.sig
	}
	return out, nil
}

type claimed struct {
	seq int64
	sig signals.Signal
}

// runClaim sends b, whose last statement is the claim, and collects the
// claimed rows. Close reads the batch to its end, so an error at commit
// is returned too.
func (s *Store) runClaim(ctx context.Context, b *pgx.Batch) (got []claimed, err error) {
	res := s.pool.SendBatch(ctx, b)
	defer func() { err = errors.Join(err, res.Close()) }()
	for range b.Len() - 1 {
		if _, err := res.Exec(); err != nil {
			return nil, err
		}
	}
	rows, err := res.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		seq, sig, err := scanSignal(rows)
		if err != nil {
			return nil, err
		}
		got = append(got, claimed{seq, sig})
	}
	return got, rows.Err()
}

// Confirm implements [signals.Store]. A confirmation commits relaxed, as a
// lease-mode claim does (see relaxed): only lease-mode deliveries are ever
// confirmed, and an undone confirmation means a redelivery with the same
// signal id.
func (s *Store) Confirm(ctx context.Context, identity string, deliveryIDs []string) (n int, err error) {
	b := &pgx.Batch{}
	b.Queue(relaxCommitSQL)
	b.Queue(s.q.confirm, identity, deliveryIDs)
	res := s.pool.SendBatch(ctx, b)
	defer func() { err = signals.StoreError("ack", errors.Join(err, res.Close())) }()
	if _, err := res.Exec(); err != nil {
		return 0, err
	}
	tag, err := res.Exec()
	return int(tag.RowsAffected()), err
}

// Depth implements [signals.Store].
func (s *Store) Depth(ctx context.Context, identity string) (signals.Depth, error) {
	d := signals.Depth{Identity: identity}
	err := s.pool.QueryRow(ctx, s.q.depth, identity).Scan(&d.Pending, &d.Leased)
	return d, signals.StoreError("depth", err)
}

// Signal implements [signals.Store].
func (s *Store) Signal(ctx context.Context, id string) (signals.Signal, error) {
	_, sig, err := scanSignal(s.pool.QueryRow(ctx, s.q.signal, id))
	if isNoRows(err) {
		return sig, signals.Errorf(signals.CodeNotFound, "get", "no signal %q", id)
	}
	return sig, signals.StoreError("get", err)
}

// CreateSession implements [signals.Store].
func (s *Store) CreateSession(ctx context.Context, sess signals.Session) error {
	tag, err := s.pool.Exec(ctx, s.q.createSession, sess.ID, sess.Identity, sess.StartedAt)
	if err != nil {
		return signals.StoreError("start", err)
	}
	if tag.RowsAffected() == 0 {
		return signals.Errorf(signals.CodeAlreadyExists, "start", "session %q exists", sess.ID)
	}
	return nil
}

// Session implements [signals.Store].
func (s *Store) Session(ctx context.Context, id string) (signals.Session, error) {
	var sess signals.Session
	err := s.pool.QueryRow(ctx, s.q.session, id).Scan(&sess.ID, &sess.Identity, &sess.StartedAt, &sess.EndedAt)
	if isNoRows(err) {
		return sess, signals.Errorf(signals.CodeNotFound, "session", "no session %q", id)
	}
	sess.StartedAt = sess.StartedAt.UTC()
	sess.EndedAt = utc(sess.EndedAt)
	return sess, signals.StoreError("session", err)
}

// EndSession implements [signals.Store].
func (s *Store) EndSession(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, s.q.endSession, id)
	if err != nil {
		return signals.StoreError("wrap", err)
	}
	if tag.RowsAffected() == 0 {
		return signals.Errorf(signals.CodeNotFound, "wrap", "no session %q", id)
	}
	return nil
}
