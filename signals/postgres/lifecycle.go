package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/prism-local/prism/signals"
)

const nodeColumns = `id, parent, root, session, executor, kind, notify, state, detail, created_at, finished_at, notified_at`

func scanNode(r pgx.Row) (signals.Node, error) {
	var (
		n      signals.Node
		parent *string
		state  string
	)
	err := r.Scan(&n.ID, &parent, &n.Root, &n.Session, &n.Executor, &n.Kind, &n.Notify, &state, &n.Detail, &n.CreatedAt, &n.FinishedAt, &n.NotifiedAt)
	if err != nil {
		return n, err
	}
	if parent != nil {
		n.Parent = *parent
	}
	n.State = signals.State(state)
	n.CreatedAt = n.CreatedAt.UTC()
	n.FinishedAt = utc(n.FinishedAt)
	n.NotifiedAt = utc(n.NotifiedAt)
	return n, nil
}

// change runs fn in a transaction and NOTIFYs the watchers of the tree it
// names; the notification is sent when the transaction commits.
func (s *Store) change(ctx context.Context, op string, fn func(tx pgx.Tx) (signals.Node, bool, error)) (signals.Node, error) {
	var n signals.Node
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			changed bool
			err     error
		)
		n, changed, err = fn(tx)
		if err != nil || !changed {
			return err
		}
		return s.notify(ctx, tx, signals.TreeKey(n.Root))
	})
	if err != nil {
		return signals.Node{}, signals.StoreError(op, err)
	}
	return n, nil
}

const (
	lockNodeSQL   = `SELECT ` + nodeColumns + ` FROM {executions} WHERE id = $1 FOR UPDATE`
	parentNodeSQL = `SELECT ` + nodeColumns + ` FROM {executions} WHERE id = $1 FOR SHARE`
	insertNodeSQL = `INSERT INTO {executions} (id, parent, root, session, executor, kind, notify, state)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'running') ON CONFLICT (id) DO NOTHING RETURNING ` + nodeColumns
	recordNodeSQL = `UPDATE {executions} SET state = $2, detail = $3, finished_at = clock_timestamp()
		WHERE id = $1 RETURNING ` + nodeColumns
	notifiedNodeSQL   = `UPDATE {executions} SET notified_at = clock_timestamp() WHERE id = $1 RETURNING ` + nodeColumns
	nodesByRootSQL    = `SELECT ` + nodeColumns + ` FROM {executions} WHERE root = $1 ORDER BY seq`
	nodesBySessionSQL = `SELECT ` + nodeColumns + ` FROM {executions}
		WHERE root IN (SELECT id FROM {executions} WHERE parent IS NULL AND session = $1) ORDER BY seq`
)

func (s *Store) lockNode(ctx context.Context, tx pgx.Tx, op, id string) (signals.Node, error) {
	n, err := scanNode(tx.QueryRow(ctx, s.q.lockNode, id))
	if isNoRows(err) {
		return n, signals.Errorf(signals.CodeNotFound, op, "execution %q is not registered", id)
	}
	return n, err
}

// AddNode implements [signals.Store].
func (s *Store) AddNode(ctx context.Context, n signals.Node) (signals.Node, error) {
	return s.change(ctx, "register", func(tx pgx.Tx) (signals.Node, bool, error) {
		if n.Parent == "" {
			n.Root, n.Notify = n.ID, false
		} else {
			p, err := scanNode(tx.QueryRow(ctx, s.q.parentNode, n.Parent))
			if isNoRows(err) {
				return n, false, signals.Errorf(signals.CodeNotFound, "register", "parent execution %q is not registered", n.Parent)
			}
			if err != nil {
				return n, false, err
			}
			n.Root = p.Root
			if n.Session == "" {
				n.Session = p.Session
			}
		}
		var parent *string
		if n.Parent != "" {
			parent = &n.Parent
		}
		got, err := scanNode(tx.QueryRow(ctx, s.q.insertNode, n.ID, parent, n.Root, n.Session, n.Executor, n.Kind, n.Notify))
		if isNoRows(err) {
			return n, false, signals.Errorf(signals.CodeAlreadyExists, "register", "execution %q is already registered", n.ID)
		}
		return got, err == nil, err
	})
}

// Record implements [signals.Store].
func (s *Store) Record(ctx context.Context, id, executor string, o signals.Outcome) (signals.Node, error) {
	return s.change(ctx, "record", func(tx pgx.Tx) (signals.Node, bool, error) {
		n, err := s.lockNode(ctx, tx, "record", id)
		if err != nil {
			return n, false, err
		}
		if n.Executor != executor {
			return n, false, signals.Errorf(signals.CodeNotExecutor, "record", "only executor %q records the outcome of %q", n.Executor, id)
		}
		if n.State.Terminal() {
			if n.State == o.State && n.Detail == o.Detail {
				return n, false, nil
			}
			return n, false, signals.Errorf(signals.CodeOutcomeConflict, "record", "execution %q already ended %s", id, n.State)
		}
		n, err = scanNode(tx.QueryRow(ctx, s.q.recordNode, id, string(o.State), o.Detail))
		return n, err == nil, err
	})
}

// MarkNotified implements [signals.Store].
func (s *Store) MarkNotified(ctx context.Context, id string) (signals.Node, error) {
	return s.change(ctx, "notified", func(tx pgx.Tx) (signals.Node, bool, error) {
		n, err := s.lockNode(ctx, tx, "notified", id)
		if err != nil {
			return n, false, err
		}
		if !n.State.Terminal() {
			return n, false, signals.Errorf(signals.CodeNotTerminal, "notified", "execution %q is still running; record its outcome first", id)
		}
		if n.NotifiedAt != nil {
			return n, false, nil
		}
		n, err = scanNode(tx.QueryRow(ctx, s.q.notifiedNode, id))
		return n, err == nil, err
	})
}

// Nodes implements [signals.Store].
func (s *Store) Nodes(ctx context.Context, q signals.NodeQuery) ([]signals.Node, error) {
	var out []signals.Node
	err := func() error {
		var (
			rows pgx.Rows
			err  error
		)
		if q.Root != "" {
			rows, err = s.pool.Query(ctx, s.q.nodesByRoot, q.Root)
		} else {
			rows, err = s.pool.Query(ctx, s.q.nodesBySession, q.Session)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			n, err := scanNode(rows)
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	}()
	return out, signals.StoreError("nodes", err)
}
