package onnx

import (
	"bytes"
	"testing"
)

// FuzzParseSignature: no input makes the signature reader panic or read
// past what it was given.
func FuzzParseSignature(f *testing.F) {
	// model { graph { input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } dim { dim_param: "s" } } } } } } }
	dim := []byte{0x0a, 0x02, 0x08, 0x02}
	dimP := []byte{0x0a, 0x03, 0x12, 0x01, 's'}
	shape := append(append([]byte{0x12, byte(len(dim) + len(dimP))}, dim...), dimP...)
	tensor := append([]byte{0x0a, byte(2 + len(shape)), 0x08, 0x01}, shape...)
	vi := append([]byte{0x0a, 0x01, 'x', 0x12, byte(len(tensor))}, tensor...)
	graph := append([]byte{0x5a, byte(len(vi))}, vi...)
	graph = append(graph, 0x2a, 0x03, 0x42, 0x01, 'w') // initializer named "w"
	model := append([]byte{0x08, 0x08, 0x3a, byte(len(graph))}, graph...)
	f.Add(model)
	f.Add([]byte{0x3a, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		ins, _, err := parseSignature(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, in := range ins {
			if len(in.dims) > len(data) {
				t.Fatalf("%d dims from %d bytes", len(in.dims), len(data))
			}
		}
	})
}
