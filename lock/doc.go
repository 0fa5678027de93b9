// Package lock is Prism's cross-process model-load lock (spec P2).
//
// Loading a model is the moment several processes on one machine can exhaust
// its memory together, so every Prism process takes one machine-wide lock
// while it checks the resource budget and loads a model, and gives it back
// before generating. The lock is flock(2) on <dir>/load.lock, where dir is
// lock.WithDir or ~/.prism (PRISM_HOME at the edge). The kernel drops a flock when its holder dies, so
// the lock vanishes with its holder, even after SIGKILL.
//
// The holder records {pid, model, since} beside the lock so a waiting
// process can say who it waited for: a waiter that runs out of time
// (WithTimeout, PRISM_LOAD_TIMEOUT at the edge, default 120 s) fails with a *TimeoutError naming the
// holder's pid and model. Metadata is only believed while the flock is
// actually held, so a record left by a killed process is never reported as a
// live holder.
//
// A process that keeps a model in memory after loading can say so with
// MarkResident; Residents lists the live ones, which is how a refused load
// names the process that holds the memory (P1, P12's error.holder).
//
// Acquire is meant to wrap "check and load" only:
//
//	held, err := lk.Acquire(ctx, "qwen2.5-0.5b")
//	if err != nil { return err }
//	model, err := checkAndLoad(ctx)
//	held.Release()
//	// generate without the lock
package lock
