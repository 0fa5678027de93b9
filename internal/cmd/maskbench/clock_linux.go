package main

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// threadClock returns a clock of the calling thread's CPU time, which
// leaves out the time the thread waited for a core: on a loaded machine it
// measures the work of a mask rather than the queue. It locks the calling
// goroutine to its thread for the rest of the run.
func threadClock() (func() time.Duration, error) {
	runtime.LockOSThread()
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	now := func() time.Duration {
		var ts syscall.Timespec
		_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
		return time.Duration(ts.Nano())
	}
	return now, nil
}
