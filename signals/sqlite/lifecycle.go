package sqlite

import (
	"context"
	"database/sql"
	"github.com/prism-local/prism/errcode"

	"github.com/prism-local/prism/signals"
)

const nodeColumns = `id, parent, root, session, executor, kind, notify, state, detail, created_at, finished_at, notified_at`

func scanNode(r row) (signals.Node, error) {
	var (
		n                 signals.Node
		parent            sql.NullString
		state             string
		created           int64
		finished, notifed sql.NullInt64
	)
	err := r.Scan(&n.ID, &parent, &n.Root, &n.Session, &n.Executor, &n.Kind, &n.Notify, &state, &n.Detail, &created, &finished, &notifed)
	if err != nil {
		return n, err
	}
	n.Parent = parent.String
	n.State = signals.State(state)
	n.CreatedAt = *fromMicros(sql.NullInt64{Int64: created, Valid: true})
	n.FinishedAt = fromMicros(finished)
	n.NotifiedAt = fromMicros(notifed)
	return n, nil
}

// inTx runs fn in one BEGIN IMMEDIATE transaction and, when it committed,
// wakes the watchers of the tree it names.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx *sql.Tx) (signals.Node, error)) (signals.Node, error) {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return signals.Node{}, signals.StoreError(op, err)
	}
	defer func() { _ = tx.Rollback() }()
	n, err := fn(tx)
	if err != nil {
		return signals.Node{}, signals.StoreError(op, err)
	}
	if err := tx.Commit(); err != nil {
		return signals.Node{}, signals.StoreError(op, err)
	}
	s.hub.Notify(signals.TreeKey(n.Root))
	return n, nil
}

func getNode(ctx context.Context, tx *sql.Tx, op, id string) (signals.Node, error) {
	n, err := scanNode(tx.QueryRowContext(ctx, `SELECT `+nodeColumns+` FROM executions WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return n, signals.Errorf(signals.CodeNotFound, op, "execution %q is not registered", id)
	}
	return n, err
}

// AddNode implements [signals.Store].
func (s *Store) AddNode(ctx context.Context, n signals.Node) (signals.Node, error) {
	return s.inTx(ctx, "register", func(tx *sql.Tx) (signals.Node, error) {
		if _, err := getNode(ctx, tx, "register", n.ID); err == nil {
			return n, signals.Errorf(signals.CodeAlreadyExists, "register", "execution %q is already registered", n.ID)
		} else if errcode.Of(err) != signals.CodeNotFound {
			return n, err
		}
		if n.Parent == "" {
			n.Root, n.Notify = n.ID, false
		} else {
			p, err := getNode(ctx, tx, "register", n.Parent)
			if err != nil {
				if errcode.Of(err) == signals.CodeNotFound {
					return n, signals.Errorf(signals.CodeNotFound, "register", "parent execution %q is not registered", n.Parent)
				}
				return n, err
			}
			n.Root = p.Root
			if n.Session == "" {
				n.Session = p.Session
			}
		}
		n.State, n.Detail, n.FinishedAt, n.NotifiedAt = signals.Running, "", nil, nil
		n.CreatedAt = now()
		_, err := tx.ExecContext(ctx, `INSERT INTO executions (id, parent, root, session, executor, kind, notify, state, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			n.ID, nullable(n.Parent), n.Root, n.Session, n.Executor, n.Kind, n.Notify, string(n.State), micros(n.CreatedAt))
		return n, err
	})
}

// Record implements [signals.Store].
func (s *Store) Record(ctx context.Context, id, executor string, o signals.Outcome) (signals.Node, error) {
	return s.inTx(ctx, "record", func(tx *sql.Tx) (signals.Node, error) {
		n, err := getNode(ctx, tx, "record", id)
		if err != nil {
			return n, err
		}
		if n.Executor != executor {
			return n, signals.Errorf(signals.CodeNotExecutor, "record", "only executor %q records the outcome of %q", n.Executor, id)
		}
		if n.State.Terminal() {
			if n.State == o.State && n.Detail == o.Detail {
				return n, nil
			}
			return n, signals.Errorf(signals.CodeOutcomeConflict, "record", "execution %q already ended %s", id, n.State)
		}
		t := now()
		n.State, n.Detail, n.FinishedAt = o.State, o.Detail, &t
		_, err = tx.ExecContext(ctx, `UPDATE executions SET state = ?, detail = ?, finished_at = ? WHERE id = ?`,
			string(o.State), o.Detail, micros(t), id)
		return n, err
	})
}

// MarkNotified implements [signals.Store].
func (s *Store) MarkNotified(ctx context.Context, id string) (signals.Node, error) {
	return s.inTx(ctx, "notified", func(tx *sql.Tx) (signals.Node, error) {
		n, err := getNode(ctx, tx, "notified", id)
		if err != nil {
			return n, err
		}
		if !n.State.Terminal() {
			return n, signals.Errorf(signals.CodeNotTerminal, "notified", "execution %q is still running; record its outcome first", id)
		}
		if n.NotifiedAt != nil {
			return n, nil
		}
		t := now()
		n.NotifiedAt = &t
		_, err = tx.ExecContext(ctx, `UPDATE executions SET notified_at = ? WHERE id = ?`, micros(t), id)
		return n, err
	})
}

// Nodes implements [signals.Store].
func (s *Store) Nodes(ctx context.Context, q signals.NodeQuery) ([]signals.Node, error) {
	var (
		rows *sql.Rows
		err  error
	)
	if q.Root != "" {
		rows, err = s.reader.QueryContext(ctx, `SELECT `+nodeColumns+` FROM executions WHERE root = ? ORDER BY seq`, q.Root)
	} else {
		rows, err = s.reader.QueryContext(ctx, `SELECT `+nodeColumns+` FROM executions
			WHERE root IN (SELECT id FROM executions WHERE parent IS NULL AND session = ?) ORDER BY seq`, q.Session)
	}
	if err != nil {
		return nil, signals.StoreError("nodes", err)
	}
	defer rows.Close()
	var out []signals.Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, signals.StoreError("nodes", err)
		}
		out = append(out, n)
	}
	return out, signals.StoreError("nodes", rows.Err())
}
