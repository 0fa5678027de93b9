//go:build linux

package onnx

import "syscall"

// madvFree is Linux's MADV_FREE (since 4.5).
const madvFree = 8

// releasePages tells the kernel the contents of b are no longer needed: it
// may take the pages back under memory pressure, and until it does, writing
// to them again costs no page faults. Kernels without MADV_FREE ignore it.
func releasePages(b []byte) {
	if len(b) > 0 {
		_ = syscall.Madvise(b, madvFree)
	}
}
