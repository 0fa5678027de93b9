package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/prism-local/prism/errcode"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Loader loads a model by the name a caller gave to Manager.Use and returns
// an Engine over it. prism.Open is the loader for real models.
type Loader func(ctx context.Context, model string) (*Engine, error)

// Manager keeps one resident model behind one lock (spec I2). Use queues
// callers in arrival order, loads the model they ask for (unloading the
// resident one when another is wanted, after the generations in progress
// end) and hands out a Lease; the next caller gets the engine when the
// lease is released. Loading and generation are therefore serialised.
//
// An engine that decodes in batches (ModelInfo.MaxBatch above 1) takes
// that many leases at once: callers for the resident model get one each,
// in arrival order, while one is free. A caller for another model, or an
// Unload, waits for every lease to be released and blocks the callers
// queued behind it; loads and unloads stay exclusive. With MaxBatch 1
// there is one lease at a time.
//
// The queue is bounded (WithMaxQueue) and time-limited (WithQueueTimeout);
// both answer with a *ServerBusyError. A waiter whose client is gone
// (isAlive returns false, polled every 50 ms, or its context ends) leaves
// the queue at once with a *ClientDisconnectedError (P9). A Manager is safe for concurrent use.
type Manager struct {
	load Loader
	cfg  managerConfig
	log  *slog.Logger

	mu sync.Mutex
	// leases counts the leases out on the resident engine; exclusive is
	// set while a load, an unload or Close holds the model alone.
	leases    int
	exclusive bool
	queue     waitQueue
	closed    bool
	cur       *Engine
	curModel  string
	idle      *time.Timer
	lastUsed  time.Time

	loads, unloads, rejected, timedOut, disconnected atomic.Uint64
}

// NewManager returns a Manager that loads models with load; settings not
// given as options take their defaults (DefaultMaxQueue,
// DefaultQueueTimeout).
func NewManager(load Loader, opts ...ManagerOption) (*Manager, error) {
	if load == nil {
		return nil, fmt.Errorf("engine: NewManager needs a loader")
	}
	cfg, err := newManagerConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Manager{load: load, cfg: cfg, log: cfg.logger}, nil
}

// Lease is the right to use an Engine until Release. Release it as soon as
// the generation ends (defer lease.Release()); the next waiter is blocked
// until then. Close or drain the lease's streams before releasing it: a
// model swap or unload closes the engine, and Engine.Close waits for a
// stream still open on it.
type Lease struct {
	m        *Manager
	e        *Engine
	released atomic.Bool
}

// Engine returns the leased engine. Do not use it after Release.
func (l *Lease) Engine() *Engine { return l.e }

// Release gives the engine back and lets the next waiter in. It is
// idempotent.
func (l *Lease) Release() {
	if l.released.Swap(true) {
		return
	}
	l.m.release(true)
}

// Use waits for the engine lock, makes model the resident model (loading it,
// after unloading another one, if needed) and returns a Lease on it.
//
// isAlive, if not nil, is asked before queueing, every 50 ms while queued
// and once more after the lock is won: when it returns false the caller
// leaves with a *ClientDisconnectedError, and a lock won in that instant is
// released before any model work. A cancelled ctx behaves the same (the
// error then wraps ctx.Err()). A full queue or a wait beyond the queue
// timeout returns a *ServerBusyError (errors.Is(err, ErrServerBusy)). Load
// failures come back as *ModelLoadError (or the loader's own coded error).
func (m *Manager) Use(ctx context.Context, model string, isAlive func() bool) (*Lease, error) {
	shared, err := m.acquire(ctx, model, false, isAlive, true)
	if err != nil {
		return nil, err
	}
	if err := m.stillWanted(ctx, isAlive); err != nil {
		m.release(shared)
		return nil, err
	}
	m.mu.Lock()
	closed, cur, curModel := m.closed, m.cur, m.curModel
	m.mu.Unlock()
	if closed { // the lock was handed over as Close began: no model work
		m.release(shared)
		return nil, ErrClosed
	}
	if shared { // a lease on the resident engine, which stays while leased
		return &Lease{m: m, e: cur}, nil
	}
	if cur != nil && curModel == model && !cur.closed.Load() {
		m.lease()
		return &Lease{m: m, e: cur}, nil
	}
	if cur != nil {
		m.log.Info("unloading model to load another", "model", curModel, "next", model)
		m.dropResident()
	}
	e, err := m.load(ctx, model)
	if err != nil {
		m.release(false)
		return nil, loadError(model, err)
	}
	m.loads.Add(1)
	m.mu.Lock()
	m.cur, m.curModel = e, model
	m.mu.Unlock()
	m.lease()
	return &Lease{m: m, e: e}, nil
}

// lease turns the exclusive hold into the first lease on the resident
// engine and lets in the waiters that can share it.
func (m *Manager) lease() {
	m.mu.Lock()
	m.exclusive = false
	m.leases++
	m.handOffLocked()
	m.mu.Unlock()
}

// loadError makes err a ModelLoadError naming model, unless it is one
// already, carries a more specific code (insufficient_resources,
// load_lock_timeout) or is the caller's cancellation.
func loadError(model string, err error) error {
	var le *ModelLoadError
	if errors.As(err, &le) || ctxError(err) {
		return err
	}
	if c := errcode.Of(err); c != "" && c != CodeModelLoadFailed {
		return err
	}
	return &ModelLoadError{Model: model, Err: err}
}

// ctxError reports a load that ended because the caller's context did; the
// loader may have wrapped the context's error in its own.
func ctxError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// stillWanted re-checks the caller right after the lock was won.
func (m *Manager) stillWanted(ctx context.Context, isAlive func() bool) error {
	if err := ctx.Err(); err != nil {
		m.disconnected.Add(1)
		return &ClientDisconnectedError{Err: err}
	}
	if isAlive != nil && !isAlive() {
		m.disconnected.Add(1)
		m.log.Debug("client disconnected as the engine lock was won; lock released")
		return &ClientDisconnectedError{}
	}
	return nil
}

// acquire takes the lock, queueing in arrival order: a lease on the
// resident engine when it is model's and has one free (shared), else the
// model alone, once no lease is out; alone (Unload) always takes the
// model alone. bounded applies the queue limit and timeout (Use); Unload
// waits without them.
func (m *Manager) acquire(ctx context.Context, model string, alone bool, isAlive func() bool, bounded bool) (shared bool, err error) {
	if err := ctx.Err(); err != nil {
		m.disconnected.Add(1)
		return false, &ClientDisconnectedError{Err: err}
	}
	if isAlive != nil && !isAlive() {
		m.disconnected.Add(1)
		return false, &ClientDisconnectedError{}
	}
	w := &waiter{model: model, alone: alone}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false, ErrClosed
	}
	if m.queue.n == 0 && m.grantLocked(w) {
		m.mu.Unlock()
		return w.shared, nil
	}
	if bounded && m.queue.n >= m.cfg.maxQueue {
		n := m.queue.n
		m.mu.Unlock()
		m.rejected.Add(1)
		return false, &ServerBusyError{Reason: fmt.Sprintf("%d requests already waiting for the model (max queue %d)", n, m.cfg.maxQueue), RetryAfter: DefaultRetryAfter}
	}
	w.ready = make(chan struct{}, 1)
	m.queue.push(w)
	m.mu.Unlock()
	err = m.wait(ctx, w, isAlive, bounded)
	return w.shared, err
}

// wait waits for w to be granted the lock, to time out or to be left.
func (m *Manager) wait(ctx context.Context, w *waiter, isAlive func() bool, bounded bool) error {
	var timeout <-chan time.Time
	if bounded && m.cfg.queueTimeout > 0 {
		t := time.NewTimer(m.cfg.queueTimeout)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	if isAlive != nil {
		t := time.NewTicker(m.cfg.alivePoll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-w.ready:
			return w.err
		case <-ctx.Done():
			m.disconnected.Add(1)
			m.log.Debug("client gone while queued for the engine", "err", ctx.Err())
			return m.abandon(w, &ClientDisconnectedError{Err: ctx.Err()})
		case <-timeout:
			m.timedOut.Add(1)
			return m.abandon(w, &ServerBusyError{Reason: fmt.Sprintf("waited %s for the model (queue timeout)", m.cfg.queueTimeout), RetryAfter: DefaultRetryAfter})
		case <-tick:
			if !isAlive() {
				m.disconnected.Add(1)
				m.log.Debug("client disconnected while queued for the engine")
				return m.abandon(w, &ClientDisconnectedError{})
			}
		}
	}
}

// abandon takes w out of the queue; if the lock was handed to w in the
// meantime, it is passed on at once. A waiter leaving the head of the
// queue may unblock those behind it.
func (m *Manager) abandon(w *waiter, err error) error {
	m.mu.Lock()
	switch {
	case w.err != nil:
		err = w.err
	case w.granted:
		m.releaseLocked(w.shared)
	default:
		m.queue.remove(w)
		m.handOffLocked()
	}
	m.mu.Unlock()
	return err
}

// release gives back a lease (shared) or the exclusive hold and lets the
// next waiters in.
func (m *Manager) release(shared bool) {
	m.mu.Lock()
	m.releaseLocked(shared)
	m.mu.Unlock()
}

func (m *Manager) releaseLocked(shared bool) {
	if shared {
		m.leases--
	} else {
		m.exclusive = false
	}
	m.handOffLocked()
}

// busyLocked reports whether a lease, a load, an unload or Close holds
// the model.
func (m *Manager) busyLocked() bool { return m.leases > 0 || m.exclusive }

// grantLocked gives w what it waits for if it can have it now: a lease
// on the resident engine when w wants that model and one is free, else
// the model alone when nothing holds it.
func (m *Manager) grantLocked(w *waiter) bool {
	switch {
	case !w.alone && !m.exclusive && !m.closed && m.cur != nil && m.curModel == w.model &&
		!m.cur.closed.Load() && m.leases < max(1, m.cur.info.MaxBatch):
		m.leases++
		w.shared = true
	case !m.busyLocked():
		m.exclusive = true
	default:
		return false
	}
	return true
}

// handOffLocked grants the waiters at the head of the queue what they
// wait for, in order, until one has to wait (which blocks those behind
// it); with nothing held and nobody waiting it starts the idle clock.
func (m *Manager) handOffLocked() {
	for w := m.queue.head; w != nil; w = m.queue.head {
		if !m.grantLocked(w) {
			return
		}
		m.queue.remove(w)
		w.granted = true
		w.ready <- struct{}{}
	}
	if m.busyLocked() {
		return
	}
	m.lastUsed = time.Now()
	if m.cfg.idleUnload > 0 && m.cur != nil && !m.closed {
		if m.idle == nil {
			m.idle = time.AfterFunc(m.cfg.idleUnload, m.idleCheck)
		} else {
			m.idle.Reset(m.cfg.idleUnload)
		}
	}
}

// idleCheck unloads the resident model if it stayed unused long enough.
func (m *Manager) idleCheck() {
	m.mu.Lock()
	if m.closed || m.busyLocked() || m.queue.n > 0 || m.cur == nil {
		m.mu.Unlock()
		return
	}
	if left := m.cfg.idleUnload - time.Since(m.lastUsed); left > 0 {
		m.idle.Reset(left)
		m.mu.Unlock()
		return
	}
	m.exclusive = true
	model := m.curModel
	m.mu.Unlock()
	m.log.Info("unloading idle model", "model", model, "idle", m.cfg.idleUnload)
	m.dropResident()
	m.release(false)
}

// dropResident closes the resident engine; the caller holds the lock.
func (m *Manager) dropResident() (model string, dropped bool) {
	m.mu.Lock()
	e, model := m.cur, m.curModel
	m.cur, m.curModel = nil, ""
	m.mu.Unlock()
	if e == nil {
		return "", false
	}
	if err := e.Close(); err != nil {
		m.log.Warn("closing model", "model", model, "err", err)
	}
	m.unloads.Add(1)
	return model, true
}

// UnloadResult reports what Unload did.
type UnloadResult struct {
	// Unloaded is true when a model was resident and has been released.
	Unloaded bool
	// Model is the released model's name ("" when none was resident).
	Model string
}

// Unload releases the resident model, waiting for the generations in
// progress (and the requests queued before it) to finish. It is
// idempotent: with nothing resident it reports Unloaded false. (P8)
func (m *Manager) Unload(ctx context.Context) (UnloadResult, error) {
	if _, err := m.acquire(ctx, "", true, nil, false); err != nil {
		return UnloadResult{}, err
	}
	defer m.release(false)
	model, ok := m.dropResident()
	return UnloadResult{Unloaded: ok, Model: model}, nil
}

// ManagerStats is a snapshot of the Manager for /health and /metrics.
type ManagerStats struct {
	// Waiting is the number of requests queued for the lock (queue depth).
	Waiting int
	// MaxQueue is the queue bound.
	MaxQueue int
	// InUse is true while the lock is held (generation, load or unload).
	InUse bool
	// Leases is the number of leases out on the resident model (up to its
	// MaxBatch).
	Leases int
	// ActiveModel is the resident model's name, "" when none.
	ActiveModel string
	// Device is the resident model's execution provider.
	Device string
	// FallbackReason is why the resident model is not on the requested device.
	FallbackReason string
	// KVCache, KVCacheReason, Prefill and PrefillReason are the resident
	// model's cache strategy and prefill mode and what its proofs at load
	// found (ModelInfo).
	KVCache, KVCacheReason, Prefill, PrefillReason string
	// Speculation and SpeculationReason say whether the resident model
	// decodes speculatively, and why (ModelInfo).
	Speculation, SpeculationReason string
	// Batch, BatchReason and MaxBatch say whether the resident model
	// decodes streams in batches, why, and how many at once (ModelInfo).
	Batch, BatchReason string
	MaxBatch           int
	// Loads and Unloads count model loads and releases.
	Loads, Unloads uint64
	// Rejected counts requests turned away because the queue was full,
	// TimedOut those that waited past the queue timeout, Disconnected
	// those whose client left while waiting.
	Rejected, TimedOut, Disconnected uint64
}

// Stats returns a snapshot of the Manager.
func (m *Manager) Stats() ManagerStats {
	m.mu.Lock()
	s := ManagerStats{Waiting: m.queue.n, MaxQueue: m.cfg.maxQueue, InUse: m.busyLocked(), Leases: m.leases, ActiveModel: m.curModel}
	if m.cur != nil {
		info := m.cur.info
		s.Device, s.FallbackReason = info.Device, info.FallbackReason
		s.KVCache, s.KVCacheReason = info.KVCache, info.KVCacheReason
		s.Prefill, s.PrefillReason = info.Prefill, info.PrefillReason
		s.Speculation, s.SpeculationReason = info.Speculation, info.SpeculationReason
		s.Batch, s.BatchReason, s.MaxBatch = info.Batch, info.BatchReason, info.MaxBatch
	}
	m.mu.Unlock()
	s.Loads, s.Unloads = m.loads.Load(), m.unloads.Load()
	s.Rejected, s.TimedOut, s.Disconnected = m.rejected.Load(), m.timedOut.Load(), m.disconnected.Load()
	return s
}

// Close turns every queued waiter away with ErrClosed, waits for the leases
// in use, if any, and unloads the resident model. Use fails with ErrClosed
// afterwards. Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	if m.idle != nil {
		m.idle.Stop()
	}
	for w := m.queue.pop(); w != nil; w = m.queue.pop() {
		w.err = ErrClosed
		w.ready <- struct{}{}
	}
	var w *waiter
	if m.busyLocked() {
		w = &waiter{alone: true, ready: make(chan struct{}, 1)}
		m.queue.push(w)
	} else {
		m.exclusive = true
	}
	m.mu.Unlock()
	if w != nil {
		<-w.ready
	}
	m.dropResident()
	m.mu.Lock()
	m.exclusive = false
	m.mu.Unlock()
	return nil
}
