//go:build !linux

package onnx

// releasePages is a no-op where MADV_FREE is not known.
func releasePages([]byte) {}
