package memory

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/internal/hub"
)

// Store is the in-memory store. Create it with New.
type Store struct {
	mu       sync.Mutex
	closed   bool
	seq      int64
	signals  map[string]*entry
	byTo     map[string][]*entry // undelivered, in send order
	byKey    map[[2]string]*entry
	sessions map[string]signals.Session
	nodes    map[string]*signals.Node
	order    []string // node ids in creation order
	hub      hub.Hub
}

type entry struct {
	seq int64
	sig signals.Signal
}

// New returns an empty store.
func New() *Store {
	return &Store{
		signals:  map[string]*entry{},
		byTo:     map[string][]*entry{},
		byKey:    map[[2]string]*entry{},
		sessions: map[string]signals.Session{},
		nodes:    map[string]*signals.Node{},
	}
}

var _ signals.Store = (*Store)(nil)

func (s *Store) lock(op string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return signals.Errorf(signals.CodeStoreClosed, op, "store is closed")
	}
	return nil
}

func tp(t time.Time) *time.Time { return &t }

// Insert implements [signals.Store].
func (s *Store) Insert(ctx context.Context, msgs []signals.Message) ([]signals.Signal, error) {
	if err := s.lock("send"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]signals.Signal, 0, len(msgs))
	now := time.Now().UTC()
	touched := map[string]bool{}
	for _, m := range msgs {
		if m.IdempotencyKey != "" {
			if e, ok := s.byKey[[2]string{m.From, m.IdempotencyKey}]; ok {
				out = append(out, e.sig)
				continue
			}
		}
		s.seq++
		e := &entry{seq: s.seq, sig: signals.Signal{
			ID: signals.NewID(), From: m.From, To: m.To, Type: m.Type,
			Payload: append([]byte(nil), m.Payload...), IdempotencyKey: m.IdempotencyKey, CreatedAt: now,
		}}
		s.signals[e.sig.ID] = e
		s.byTo[m.To] = append(s.byTo[m.To], e)
		if m.IdempotencyKey != "" {
			s.byKey[[2]string{m.From, m.IdempotencyKey}] = e
		}
		touched[m.To] = true
		out = append(out, e.sig)
	}
	for to := range touched {
		s.hub.Notify(signals.InboxKey(to))
	}
	return out, nil
}

// Claim implements [signals.Store].
func (s *Store) Claim(ctx context.Context, c signals.Claim) ([]signals.Signal, error) {
	if err := s.lock("drain"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if len(c.Confirm) > 0 {
		s.confirmLocked(c.Identity, c.Confirm)
	}
	now := time.Now().UTC()
	var out []signals.Signal
	for _, e := range s.byTo[c.Identity] {
		if len(out) >= c.Limit {
			break
		}
		if e.sig.DeliveredAt != nil || (e.sig.LeaseUntil != nil && e.sig.LeaseUntil.After(now)) {
			continue
		}
		e.sig.DeliveryID = c.DeliveryID
		e.sig.DeliveryMethod = c.Method
		e.sig.Attempts++
		if c.Mode == signals.MarkOnDrain {
			e.sig.DeliveredAt = tp(now)
			e.sig.LeaseUntil = nil
		} else {
			e.sig.LeaseUntil = tp(now.Add(c.Lease))
		}
		out = append(out, e.sig)
	}
	if c.Mode == signals.MarkOnDrain {
		s.compact(c.Identity)
	}
	return out, nil
}

// compact drops delivered entries from identity's undelivered list.
func (s *Store) compact(identity string) {
	list := s.byTo[identity]
	kept := list[:0]
	for _, e := range list {
		if e.sig.DeliveredAt == nil {
			kept = append(kept, e)
		}
	}
	for i := len(kept); i < len(list); i++ {
		list[i] = nil
	}
	if len(kept) == 0 {
		delete(s.byTo, identity)
		return
	}
	s.byTo[identity] = kept
}

// Confirm implements [signals.Store].
func (s *Store) Confirm(ctx context.Context, identity string, deliveryIDs []string) (int, error) {
	if err := s.lock("ack"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.confirmLocked(identity, deliveryIDs), nil
}

func (s *Store) confirmLocked(identity string, deliveryIDs []string) int {
	want := map[string]bool{}
	for _, id := range deliveryIDs {
		want[id] = true
	}
	now := time.Now().UTC()
	n := 0
	for _, e := range s.byTo[identity] {
		if e.sig.DeliveredAt == nil && want[e.sig.DeliveryID] {
			e.sig.DeliveredAt = tp(now)
			e.sig.LeaseUntil = nil
			n++
		}
	}
	if n > 0 {
		s.compact(identity)
	}
	return n
}

// Depth implements [signals.Store].
func (s *Store) Depth(ctx context.Context, identity string) (signals.Depth, error) {
	if err := s.lock("depth"); err != nil {
		return signals.Depth{}, err
	}
	defer s.mu.Unlock()
	d := signals.Depth{Identity: identity}
	now := time.Now()
	for _, e := range s.byTo[identity] {
		switch {
		case e.sig.DeliveredAt != nil:
		case e.sig.LeaseUntil != nil && e.sig.LeaseUntil.After(now):
			d.Leased++
		default:
			d.Pending++
		}
	}
	return d, nil
}

// Signal implements [signals.Store].
func (s *Store) Signal(ctx context.Context, id string) (signals.Signal, error) {
	if err := s.lock("get"); err != nil {
		return signals.Signal{}, err
	}
	defer s.mu.Unlock()
	e, ok := s.signals[id]
	if !ok {
		return signals.Signal{}, signals.Errorf(signals.CodeNotFound, "get", "no signal %q", id)
	}
	return e.sig, nil
}

// CreateSession implements [signals.Store].
func (s *Store) CreateSession(ctx context.Context, sess signals.Session) error {
	if err := s.lock("start"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.sessions[sess.ID]; ok {
		return signals.Errorf(signals.CodeAlreadyExists, "start", "session %q exists", sess.ID)
	}
	s.sessions[sess.ID] = sess
	return nil
}

// Session implements [signals.Store].
func (s *Store) Session(ctx context.Context, id string) (signals.Session, error) {
	if err := s.lock("session"); err != nil {
		return signals.Session{}, err
	}
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return signals.Session{}, signals.Errorf(signals.CodeNotFound, "session", "no session %q", id)
	}
	return sess, nil
}

// EndSession implements [signals.Store].
func (s *Store) EndSession(ctx context.Context, id string) error {
	if err := s.lock("wrap"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return signals.Errorf(signals.CodeNotFound, "wrap", "no session %q", id)
	}
	if sess.EndedAt == nil {
		sess.EndedAt = tp(time.Now().UTC())
		s.sessions[id] = sess
	}
	return nil
}

// AddNode implements [signals.Store].
func (s *Store) AddNode(ctx context.Context, n signals.Node) (signals.Node, error) {
	if err := s.lock("register"); err != nil {
		return signals.Node{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.nodes[n.ID]; ok {
		return signals.Node{}, signals.Errorf(signals.CodeAlreadyExists, "register", "execution %q is already registered", n.ID)
	}
	if n.Parent == "" {
		n.Root = n.ID
		n.Notify = false
	} else {
		p, ok := s.nodes[n.Parent]
		if !ok {
			return signals.Node{}, signals.Errorf(signals.CodeNotFound, "register", "parent execution %q is not registered", n.Parent)
		}
		n.Root = p.Root
		if n.Session == "" {
			n.Session = p.Session
		}
	}
	n.State = signals.Running
	n.CreatedAt = time.Now().UTC()
	n.FinishedAt, n.NotifiedAt, n.Detail = nil, nil, ""
	s.nodes[n.ID] = &n
	s.order = append(s.order, n.ID)
	s.hub.Notify(signals.TreeKey(n.Root))
	return n, nil
}

// Record implements [signals.Store].
func (s *Store) Record(ctx context.Context, id, executor string, o signals.Outcome) (signals.Node, error) {
	if err := s.lock("record"); err != nil {
		return signals.Node{}, err
	}
	defer s.mu.Unlock()
	n, ok := s.nodes[id]
	if !ok {
		return signals.Node{}, signals.Errorf(signals.CodeNotFound, "record", "execution %q is not registered", id)
	}
	if n.Executor != executor {
		return signals.Node{}, signals.Errorf(signals.CodeNotExecutor, "record", "only executor %q records the outcome of %q", n.Executor, id)
	}
	if n.State.Terminal() {
		if n.State == o.State && n.Detail == o.Detail {
			return *n, nil
		}
		return signals.Node{}, signals.Errorf(signals.CodeOutcomeConflict, "record", "execution %q already ended %s", id, n.State)
	}
	n.State, n.Detail, n.FinishedAt = o.State, o.Detail, tp(time.Now().UTC())
	s.hub.Notify(signals.TreeKey(n.Root))
	return *n, nil
}

// MarkNotified implements [signals.Store].
func (s *Store) MarkNotified(ctx context.Context, id string) (signals.Node, error) {
	if err := s.lock("notified"); err != nil {
		return signals.Node{}, err
	}
	defer s.mu.Unlock()
	n, ok := s.nodes[id]
	if !ok {
		return signals.Node{}, signals.Errorf(signals.CodeNotFound, "notified", "execution %q is not registered", id)
	}
	if !n.State.Terminal() {
		return signals.Node{}, signals.Errorf(signals.CodeNotTerminal, "notified", "execution %q is still running; record its outcome first", id)
	}
	if n.NotifiedAt == nil {
		n.NotifiedAt = tp(time.Now().UTC())
		s.hub.Notify(signals.TreeKey(n.Root))
	}
	return *n, nil
}

// Nodes implements [signals.Store].
func (s *Store) Nodes(ctx context.Context, q signals.NodeQuery) ([]signals.Node, error) {
	if err := s.lock("nodes"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	roots := map[string]bool{}
	if q.Root != "" {
		roots[q.Root] = true
	} else {
		for _, id := range s.order {
			if n := s.nodes[id]; n.Parent == "" && n.Session == q.Session {
				roots[n.ID] = true
			}
		}
	}
	var out []signals.Node
	for _, id := range s.order {
		if n := s.nodes[id]; roots[n.Root] {
			out = append(out, *n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Watch implements [signals.Store].
func (s *Store) Watch(key string) (<-chan struct{}, func()) { return s.hub.Watch(key) }

// Close implements [signals.Store]. It starts no goroutines, so there is
// nothing to stop.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
