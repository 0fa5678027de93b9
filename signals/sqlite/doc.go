// Package sqlite is the embedded default [signals.Store]: one SQLite file in
// WAL mode, shared safely by several processes on one machine (for example
// the MCP servers of several editors). It uses the pure-Go modernc.org/sqlite
// driver, so it needs no cgo.
//
// A drain is one BEGIN IMMEDIATE transaction around UPDATE … RETURNING, so
// each signal goes to exactly one drainer per lease across every process
// (SPEC-037 §1). Writes within one process go through a single connection;
// processes wait for each other through busy_timeout. Lifecycle waiters are
// woken at once by writes in the same process and, for writes by other
// processes, by a poll of PRAGMA data_version (default every 2 ms) that runs
// only while someone waits. State is durable across restarts (PLAT-095).
package sqlite
