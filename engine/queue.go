package engine

// waiter is one caller queued for the Manager's lock. The list is intrusive
// so a waiter that gives up leaves in O(1).
type waiter struct {
	prev, next *waiter
	model      string        // the model wanted
	alone      bool          // wants the model alone (Unload, Close), not a lease
	ready      chan struct{} // receives once the lock is handed over (or err is set)
	granted    bool          // the lock was handed to this waiter
	shared     bool          // what was handed over is a lease on the resident engine
	err        error         // set instead of granting, when the Manager closes
}

// waitQueue is a FIFO of waiters. It is guarded by the Manager's mutex.
type waitQueue struct {
	head, tail *waiter
	n          int
}

func (q *waitQueue) push(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

func (q *waitQueue) pop() *waiter {
	w := q.head
	if w != nil {
		q.remove(w)
	}
	return w
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	q.n--
}
