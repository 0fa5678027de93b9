// Package postgres is the [signals.Store] for agents on several machines,
// over PostgreSQL through pgx v5.
//
// [New] builds the store on a caller's *pgxpool.Pool and leaves that pool
// open on Close; [Open] creates a pool of its own from a URL and closes it.
// Under [WithSchema] statements name their tables schema-qualified, so a
// shared pool's search_path is never changed.
//
// A drain is one UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED) … RETURNING
// statement: concurrent drainers skip each other's rows, so each signal goes
// to exactly one drainer per lease (SPEC-037 §1). Leases use the database
// clock, so machines with skewed clocks agree on expiry.
//
// Waking: lifecycle changes NOTIFY a per-schema channel inside the writing
// transaction (so a wake always follows a commit); each Store keeps one
// LISTEN connection and wakes its waiters, who re-read state on every wake
// and poll as a safety net. Signal sends do not NOTIFY: delivery is pull
// based by design (piggyback and poll), and NOTIFY's commit-time queue lock
// would serialise the hot send path. State is durable (PLAT-095).
//
// Durability: sends, mark-on-drain claims, sessions and the lifecycle tree
// commit synchronously. Lease-and-ack claims and confirmations commit with
// synchronous_commit off for their own transaction only: a server crash can
// undo the last of them, which leaves their signals undelivered, so they are
// delivered again with the same signal ids — the mode's at-least-once
// guarantee (docs/signals.md, "Durability of each write").
package postgres
