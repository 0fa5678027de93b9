//go:build cgo && !unix

package onnx

// dlopenError is not available on this platform.
func dlopenError(string) string { return "" }
