// Package signals is Prism's agent-to-agent signal queue and its
// exact-identity lifecycle tree.
//
// Signals: a sender queues a [Signal] for a recipient identity with
// [Queue.Send]; sending never marks delivery (SPEC-037 §2). The [Router]
// wraps an agent's verbs and drains the caller's undelivered signals into the
// pending_signals of every bootstrapped verb's response (SPEC-037 §1) except
// the session-lifecycle verbs start, checkpoint and wrap, whose responses
// carry no pending_signals key at all, and the heartbeat (SPEC-041 §1,
// ADR-25). The pending verb polls explicitly (SPEC-037 §4); the hd_exec
// pickup drains; backend results merge with an in-process [Buffer] and are
// de-duplicated by signal id (SPEC-037 §3). Delivery methods follow the
// SPEC-037 §5 taxonomy plus poll. Signals never expire (SPEC-041 Q2);
// [Queue.Depth] makes each identity's queue observable.
//
// Delivery modes: [LeaseAndAck] (the default) closes SPEC-037's loss window
// — a drain hands signals out under a lease and only a confirmation writes
// delivered_at, so a crash between drain and response means redelivery of
// the same signal id after the lease (at least once; exactly once after
// de-duplication by id). [MarkOnDrain] is plain SPEC-037: the drain writes
// delivered_at (at most once; such a crash loses the drained signals).
//
// Lifecycle: a [Tree] roots an execution tree at the id of a sent message
// (PLAT-095). Children register with their parent's id; only a node's
// executor records its outcome; a child's completion must be recorded as
// delivered to its parent. [Tree.Wait] returns only when that exact tree is
// complete; a failed root returns as a failed turn; nothing is ever inferred
// from silence or time. [Tree.Snapshot] and [Tree.Monitor] are the one
// projection waiters and monitors share.
//
// Stores implement [Store]: signals/memory (tests and single processes),
// signals/sqlite (the embedded default, several processes sharing one file)
// and signals/postgres (agents on several machines). signals/signalstest is
// the contract suite all three pass. This package imports no database
// driver. See docs/signals.md.
package signals
