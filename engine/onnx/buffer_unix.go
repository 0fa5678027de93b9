//go:build unix

package onnx

import "syscall"

// allocBuffer returns n zeroed bytes outside the Go heap. Cache and logits
// buffers are large and long-lived: mapping them keeps them out of the
// garbage collector's pacing, costs memory only for pages actually touched,
// and gives the memory back to the system the moment they are freed.
func allocBuffer(n int) ([]byte, error) {
	if n == 0 {
		n = 1
	}
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// freeBuffer releases a buffer from allocBuffer.
func freeBuffer(b []byte) {
	if b != nil {
		_ = syscall.Munmap(b[:cap(b)])
	}
}
