package grammar_test

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns a clock of the calling thread's CPU time (the caller
// locks its goroutine to the thread): on a loaded machine it leaves out the
// time spent waiting for a core, so a benchmark's tail measures its work.
func threadCPU() func() time.Duration {
	runtime.LockOSThread()
	return func() time.Duration {
		var ts syscall.Timespec
		_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
		return time.Duration(ts.Nano())
	}
}
