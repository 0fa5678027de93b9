//go:build cgo

package onnx

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// newTensor wraps buf as a tensor of type dt and shape dims without copying.
// buf may be longer than the shape needs; it must stay alive and unmoved
// until the tensor is destroyed (our buffers are mapped memory or live in
// structs that outlive their tensors).
func newTensor(buf []byte, dt ort.TensorElementDataType, dims ...int64) (*ort.CustomDataTensor, error) {
	need := int64(elemSize(dt))
	for _, d := range dims {
		need *= d
	}
	if need > int64(len(buf)) {
		return nil, fmt.Errorf("tensor %v of %s needs %d bytes, buffer has %d", dims, typeName(dt), need, len(buf))
	}
	return ort.NewCustomDataTensor(ort.Shape(dims), buf, dt)
}

func destroy(t *ort.CustomDataTensor) {
	if t != nil {
		_ = t.Destroy()
	}
}

// intInput is a [1, n] integer input (ids, positions) whose shape follows
// the step: one-token steps reuse the same tensor, so decoding creates
// nothing.
type intInput struct {
	dt  ort.TensorElementDataType
	buf []byte
	t   *ort.CustomDataTensor
	n   int // sequence length of t
}

// shape makes the tensor [1, n], reusing it when the length is unchanged.
func (in *intInput) shape(n int) error {
	if in.t != nil && in.n == n {
		return nil
	}
	es := elemSize(in.dt)
	if len(in.buf) < n*es {
		destroy(in.t)
		in.t = nil
		in.buf = make([]byte, n*es)
	}
	t, err := newTensor(in.buf, in.dt, 1, int64(n))
	if err != nil {
		return err
	}
	destroy(in.t)
	in.t, in.n = t, n
	return nil
}

func (in *intInput) set(i int, v int64) {
	if in.dt == ort.TensorElementDataTypeInt64 {
		binary.LittleEndian.PutUint64(in.buf[8*i:], uint64(v))
	} else {
		binary.LittleEndian.PutUint32(in.buf[4*i:], uint32(int32(v)))
	}
}

func (in *intInput) close() {
	destroy(in.t)
	in.t = nil
}

// logitsOutput is a [1, rows, vocab] output bound to a buffer of ours, so
// the runtime writes logits in place and nothing is copied into Go.
type logitsOutput struct {
	dt    ort.TensorElementDataType
	vocab int
	buf   []byte
	t     *ort.CustomDataTensor
	rows  int
}

func (o *logitsOutput) shape(rows int) error {
	if o.t != nil && o.rows == rows {
		return nil
	}
	need := rows * o.vocab * elemSize(o.dt)
	if len(o.buf) < need {
		destroy(o.t)
		o.t = nil
		freeBuffer(o.buf)
		o.buf = nil
		b, err := allocBuffer(need)
		if err != nil {
			return fmt.Errorf("allocate logits for %d positions (%d bytes): %w", rows, need, err)
		}
		o.buf = b
	}
	t, err := newTensor(o.buf, o.dt, 1, int64(rows), int64(o.vocab))
	if err != nil {
		return err
	}
	destroy(o.t)
	o.t, o.rows = t, rows
	return nil
}

// last returns the logits of the last row as float32: a view of the buffer
// for float32 outputs (when view is true), otherwise converted or copied
// into dst.
func (o *logitsOutput) last(dst []float32, view bool) []float32 {
	off := (o.rows - 1) * o.vocab * elemSize(o.dt)
	if o.dt == ort.TensorElementDataTypeFloat {
		src := unsafe.Slice((*float32)(unsafe.Pointer(&o.buf[off])), o.vocab)
		if view {
			return src
		}
		copy(dst, src)
		return dst
	}
	src := unsafe.Slice((*uint16)(unsafe.Pointer(&o.buf[off])), o.vocab)
	for i, h := range src {
		dst[i] = halfToFloat(h)
	}
	return dst
}

// all returns every row's logits as float32: a view of the buffer for
// float32 outputs, else converted into *dst (grown as needed).
func (o *logitsOutput) all(dst *[]float32) []float32 {
	n := o.rows * o.vocab
	if o.dt == ort.TensorElementDataTypeFloat {
		return unsafe.Slice((*float32)(unsafe.Pointer(&o.buf[0])), n)
	}
	if cap(*dst) < n {
		*dst = make([]float32, n)
	}
	out := (*dst)[:n]
	for i, h := range unsafe.Slice((*uint16)(unsafe.Pointer(&o.buf[0])), n) {
		out[i] = halfToFloat(h)
	}
	return out
}

func (o *logitsOutput) close() {
	destroy(o.t)
	o.t = nil
	freeBuffer(o.buf)
	o.buf = nil
	o.rows = 0
}

// pinnedValue is a tensor whose runtime handle is looked up once. The
// binding asks a value for its handle on every BindInput and the tensor
// types answer with a fresh allocation each time; a value rebound every
// step (the attention mask) answers from here instead.
type pinnedValue struct {
	*ort.CustomDataTensor
	internals *ort.ValueInternalData
}

func pin(t *ort.CustomDataTensor) *pinnedValue {
	return &pinnedValue{CustomDataTensor: t, internals: t.GetInternals()}
}

// GetInternals returns the handle looked up when the value was pinned.
func (v *pinnedValue) GetInternals() *ort.ValueInternalData { return v.internals }
