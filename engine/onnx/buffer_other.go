//go:build !unix

package onnx

// allocBuffer returns n zeroed bytes.
func allocBuffer(n int) ([]byte, error) {
	if n == 0 {
		n = 1
	}
	return make([]byte, n), nil
}

// freeBuffer drops a buffer from allocBuffer.
func freeBuffer([]byte) {}
