package engine

import (
	"context"
	"fmt"
	"time"
)

// How long a batched decode step waits, once its first stream asked for
// it, for the other admitted streams to ask too: a tenth of the last
// step, and at least minBatchWait. After a step every stream samples its
// token and hands it to its caller before it asks again, and on a machine
// with fewer cores than streams that takes them turns; a stream that has
// not asked by then joins the next step. Missing a step costs the
// straggler a whole step and the batch a second one, so waiting a tenth
// of a step for it is cheap; a stream whose caller is away longer costs
// the others at most that tenth per step.
const (
	minBatchWait   = time.Millisecond
	batchWaitShare = 10
)

// scheduler owns the backend while the engine decodes in batches: every
// backend call runs on its goroutine. Streams hand it jobs (a prefill and
// its admission), which run between decode steps, and decode
// requests, gathered into one Batcher.Decode; a stream that ends hands
// its sequence back, and its slot is dropped at the next step boundary.
//
// The loop's order keeps a new stream's wait short: released slots
// first, then at most one waiting job, then whichever of a job, a decode
// step or a release comes next, so between two jobs there is at most one
// decode step.
type scheduler struct {
	backend Backend
	batcher Batcher
	vocab   int
	free    chan<- int // the engine's free sequences

	jobs     chan job
	decodes  chan *seq
	releases chan *seq
	ctx      context.Context // cancelled by stop: the context of Decode
	cancel   context.CancelFunc
	stopped  chan struct{}

	// Owned by the scheduler's goroutine.
	fwd      []int32 // ids in the backend's Forward cache, by position
	admitted int     // sequences admitted to a slot and not yet dropped
	batch    []*seq
	slots    []int
	ids      []int32
	timer    *time.Timer
	lastStep time.Duration // how long the last Decode took
}

// job is backend work for one sequence; its error is answered on q.done.
type job struct {
	q  *seq
	fn func() error
}

func newScheduler(backend Backend, batcher Batcher, vocab int, free chan<- int, n int) *scheduler {
	ctx, cancel := context.WithCancel(context.Background())
	sc := &scheduler{
		backend: backend, batcher: batcher, vocab: vocab, free: free,
		jobs:     make(chan job, n),
		decodes:  make(chan *seq, n),
		releases: make(chan *seq, n),
		ctx:      ctx,
		cancel:   cancel,
		stopped:  make(chan struct{}),
		batch:    make([]*seq, 0, n),
		slots:    make([]int, 0, n),
		ids:      make([]int32, 0, n),
		timer:    time.NewTimer(time.Hour),
	}
	sc.timer.Stop()
	go sc.loop()
	return sc
}

// run has fn run on the scheduler's goroutine between decode steps and
// returns its error.
func (sc *scheduler) run(q *seq, fn func() error) error {
	sc.jobs <- job{q: q, fn: fn}
	return <-q.done
}

// decode runs q.next at q's next position in the next decode step; q.logits
// then hold the logits after it.
func (sc *scheduler) decode(q *seq) error {
	sc.decodes <- q
	return <-q.done
}

// release hands q back; its slot is dropped and q returned to free at the
// next step boundary. It never blocks: at most one release per sequence
// is outstanding.
func (sc *scheduler) release(q *seq) { sc.releases <- q }

// stop ends the scheduler's goroutine once no stream is running.
func (sc *scheduler) stop() {
	sc.cancel()
	<-sc.stopped
}

func (sc *scheduler) loop() {
	defer close(sc.stopped)
	for {
		select {
		case q := <-sc.releases:
			sc.drop(q)
			continue
		default:
		}
		select {
		case j := <-sc.jobs:
			j.q.done <- j.fn()
		default:
		}
		select {
		case q := <-sc.releases:
			sc.drop(q)
		case j := <-sc.jobs:
			j.q.done <- j.fn()
		case q := <-sc.decodes:
			sc.step(q)
		case <-sc.ctx.Done():
			return
		}
	}
}

// drop frees q's slot and gives q back to the engine.
func (sc *scheduler) drop(q *seq) {
	if q.admitted {
		sc.batcher.Drop(q.slot)
		q.admitted = false
		sc.admitted--
	}
	sc.free <- q.slot
}

// admit moves the prompt Forward just cached into q's slot.
func (sc *scheduler) admit(q *seq) error {
	if err := sc.batcher.Admit(q.slot); err != nil {
		return fmt.Errorf("admit the prompt to batch slot %d: %w", q.slot, err)
	}
	q.admitted = true
	sc.admitted++
	return nil
}

// step runs one batched decode step that first asked for, with every
// other admitted sequence that asks in time (gather).
func (sc *scheduler) step(first *seq) {
	sc.batch = append(sc.batch[:0], first)
	sc.gather()
	sc.slots, sc.ids = sc.slots[:0], sc.ids[:0]
	n := 0
	for _, q := range sc.batch {
		if err := q.ctx.Err(); err != nil { // cancelled while waiting: not worth its row
			q.done <- err
			continue
		}
		sc.batch[n] = q
		n++
		sc.slots, sc.ids = append(sc.slots, q.slot), append(sc.ids, q.next)
	}
	sc.batch = sc.batch[:n]
	if n == 0 {
		return
	}
	t0 := time.Now()
	rows, err := sc.batcher.Decode(sc.ctx, sc.slots, sc.ids)
	sc.lastStep = time.Since(t0)
	if err == nil && len(rows) < n*sc.vocab {
		err = fmt.Errorf("the backend returned %d logits for %d sequences of %d", len(rows), n, sc.vocab)
	}
	for i, q := range sc.batch {
		if err == nil {
			copy(q.logits, rows[i*sc.vocab:(i+1)*sc.vocab])
		}
		q.done <- err
		sc.batch[i] = nil
	}
}

// gather adds to the batch the decode requests of the other admitted
// sequences: those already waiting, then those that arrive within the
// wait (a tenth of the last step, at least minBatchWait), stopping as
// soon as every admitted sequence has asked. A release while waiting is
// handled at once (its sequence will not ask); so is a new stream's
// prefill, which then waits for no decode step.
func (sc *scheduler) gather() {
	for len(sc.batch) < sc.admitted && len(sc.decodes) > 0 {
		sc.batch = append(sc.batch, <-sc.decodes)
	}
	if len(sc.batch) >= sc.admitted {
		return
	}
	sc.timer.Reset(max(minBatchWait, sc.lastStep/batchWaitShare))
	defer sc.timer.Stop()
	for len(sc.batch) < sc.admitted {
		select {
		case q := <-sc.decodes:
			sc.batch = append(sc.batch, q)
		case q := <-sc.releases:
			sc.drop(q)
		case j := <-sc.jobs:
			// A new stream's prefill goes before the step: its first
			// token then waits for no step at all.
			j.q.done <- j.fn()
		case <-sc.timer.C:
			return
		}
	}
}

// prefillBatched runs the prompt through Forward on the scheduler (prefix
// reuse against what the Forward cache holds) and admits it to the
// stream's slot; s.logits are then the sequence's own copy.
func (s *Stream) prefillBatched(ids []int32, total int) error {
	sc, q := s.e.sched, s.q
	err := sc.run(q, func() error {
		// The Forward cache holds only the prompt: the answer is decoded
		// in the slot, whose room the Batcher grows itself.
		if err := s.prefill(&sc.fwd, ids, len(ids), len(ids)); err != nil {
			return err
		}
		copy(q.logits, s.logits)
		return sc.admit(q)
	})
	s.logits = nil
	if err != nil {
		return err
	}
	s.logits = q.logits
	if cap(q.cached) < total {
		q.cached = make([]int32, 0, total)
	}
	q.cached = append(q.cached[:0], ids...)
	return nil
}

// stepBatched runs the pending token in the next batched decode step.
func (s *Stream) stepBatched() bool {
	e, q := s.e, s.q
	pos := len(q.cached)
	q.next, q.ctx = q.gen[len(q.gen)-1], s.ctx
	if err := e.sched.decode(q); err != nil {
		if cerr := s.ctx.Err(); cerr != nil {
			s.finish(FinishCancelled, cerr)
		} else {
			s.finish(FinishCancelled, fmt.Errorf("decode position %d (batched): %w", pos, err))
		}
		return false
	}
	q.cached = append(q.cached, q.next)
	s.pending = false
	s.logits = q.logits
	return true
}
