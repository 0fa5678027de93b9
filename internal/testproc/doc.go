// Package testproc runs Prism's built binaries in tests as a user runs
// them: a main package built once per test binary (Binary), started with
// the test's arguments and environment (Start), waited on until it says
// it is ready (WaitLine, WaitHTTP), and stopped with a signal or the end
// of its input, its exit status and standard error kept for the test to
// check (Stop, Wait, ExitCode, Stderr).
//
// A process is reaped when the test that started it ends: one still
// running then is killed, and nothing this package started outlives the
// test, neither a process nor a goroutine. How a process ought to end
// (exit status 0 after SIGTERM, or at the end of its input) is part of
// what a test checks, so the test says it, in a cleanup of its own.
//
// The package is internal test support, not part of Prism's API.
package testproc
