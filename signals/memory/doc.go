// Package memory is an in-process [signals.Store] for tests and for agents
// that live in one process. It keeps the same contract as the database
// stores (signalstest.Run checks it: SPEC-037 §1–§3, SPEC-041 §4, PLAT-095)
// but nothing survives the process. It starts no goroutines.
package memory
