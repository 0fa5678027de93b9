package onnxgen

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
)

// builder accumulates the nodes, initializers and I/O of one graph. Weight
// initializers are not materialized: each carries a writer that streams its
// bytes into the external data file when the model is written.
type builder struct {
	seed     uint64
	nodes    []node
	inits    []*tensor
	external []externalTensor
	inputs   []valueInfo
	outputs  []valueInfo
	count    int
	domains  map[string]bool
}

// externalTensor is an initializer whose bytes go to the external data file.
type externalTensor struct {
	t     *tensor
	size  int64
	write func(w *bufio.Writer) error
}

func newBuilder(seed uint64) *builder {
	return &builder{seed: seed, domains: map[string]bool{}}
}

func (b *builder) fresh(prefix string) string {
	b.count++
	return fmt.Sprintf("%s_%d", prefix, b.count)
}

// op adds a default-domain node with one output and returns its name.
func (b *builder) op(opType string, inputs []string, attrs ...attr) string {
	return b.opN("", opType, inputs, 1, attrs...)[0]
}

// opN adds a node of domain with nOut outputs and returns their names.
func (b *builder) opN(domain, opType string, inputs []string, nOut int, attrs ...attr) []string {
	name := b.fresh(opType)
	outs := make([]string, nOut)
	for i := range outs {
		outs[i] = fmt.Sprintf("%s/out%d", name, i)
	}
	if domain != "" {
		b.domains[domain] = true
	}
	b.nodes = append(b.nodes, node{name: name, opType: opType, domain: domain, inputs: inputs, outputs: outs, attrs: attrs})
	return outs
}

// rename makes the last node's first output carry name (a graph output).
func (b *builder) output(value, name string, dtype int, shape []dim) {
	b.op2Identity(value, name)
	b.outputs = append(b.outputs, valueInfo{name: name, dtype: dtype, shape: shape})
}

func (b *builder) op2Identity(value, name string) {
	b.nodes = append(b.nodes, node{name: b.fresh("Identity"), opType: "Identity", inputs: []string{value}, outputs: []string{name}})
}

// nameOutputs lets the node producing each graph output write it under
// the output's name directly (as exporters do), dropping the Identity nodes
// output added, so an op like GroupQueryAttention owns its present buffer.
func (b *builder) nameOutputs() {
	rename := map[string]string{}
	isOutput := map[string]bool{}
	for _, o := range b.outputs {
		isOutput[o.name] = true
	}
	produced := map[string]bool{}
	for _, n := range b.nodes {
		if n.opType != "Identity" || !isOutput[n.outputs[0]] {
			for _, o := range n.outputs {
				produced[o] = true
			}
		}
	}
	kept := b.nodes[:0]
	for _, n := range b.nodes {
		if n.opType == "Identity" && isOutput[n.outputs[0]] && produced[n.inputs[0]] && rename[n.inputs[0]] == "" {
			rename[n.inputs[0]] = n.outputs[0]
			continue
		}
		kept = append(kept, n)
	}
	b.nodes = kept
	for i := range b.nodes {
		n := &b.nodes[i]
		for j, in := range n.inputs {
			if r, ok := rename[in]; ok {
				n.inputs[j] = r
			}
		}
		for j, out := range n.outputs {
			if r, ok := rename[out]; ok {
				n.outputs[j] = r
			}
		}
	}
}

func (b *builder) input(name string, dtype int, shape []dim) string {
	b.inputs = append(b.inputs, valueInfo{name: name, dtype: dtype, shape: shape})
	return name
}

// inline adds a small initializer held inside the graph.
func (b *builder) inline(dtype int, dims []int64, raw []byte) string {
	name := b.fresh("const")
	b.inits = append(b.inits, &tensor{name: name, dtype: dtype, dims: dims, raw: raw})
	return name
}

// i64 is a 1-D int64 constant.
func (b *builder) i64(vals ...int64) string {
	raw := make([]byte, 0, 8*len(vals))
	for _, v := range vals {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
	}
	return b.inline(dtInt64, []int64{int64(len(vals))}, raw)
}

// scalarI64 is a 0-D int64 constant.
func (b *builder) scalarI64(v int64) string {
	return b.inline(dtInt64, nil, binary.LittleEndian.AppendUint64(nil, uint64(v)))
}

// scalarF32 is a 0-D float constant.
func (b *builder) scalarF32(v float32) string {
	return b.inline(dtFloat, nil, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
}

// f32 is a float constant of the given shape.
func (b *builder) f32(vals []float32, dims ...int64) string {
	raw := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	return b.inline(dtFloat, dims, raw)
}

// addExternal registers an initializer streamed to the external data file.
func (b *builder) addExternal(name string, dtype int, dims []int64, write func(w *bufio.Writer) error) string {
	n := int64(dtypeSize(dtype))
	for _, d := range dims {
		n *= d
	}
	t := &tensor{name: name, dtype: dtype, dims: dims}
	b.inits = append(b.inits, t)
	b.external = append(b.external, externalTensor{t: t, size: n, write: write})
	return name
}

// source is a random-access view of a logical matrix's elements.
type source interface{ at(i int) float32 }

// transposed views a [rows, cols] source as its [cols, rows] transpose.
type transposed struct {
	src        source
	rows, cols int // of src
}

func (t transposed) at(i int) float32 {
	r, c := i/t.rows, i%t.rows // index into the [cols, rows] view
	return t.src.at(c*t.cols + r)
}

// fnSource is a source computed by a function of the element index.
type fnSource func(i int) float32

func (f fnSource) at(i int) float32 { return f(i) }

// typedWeight registers a float32 or float16 initializer from src.
func (b *builder) typedWeight(name string, dtype int, src source, dims ...int64) string {
	if dtype != dtFloat16 {
		return b.floatWeight(name, src, dims...)
	}
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	return b.addExternal(name, dtFloat16, dims, func(w *bufio.Writer) error {
		var buf [2]byte
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(buf[:], float16bits(src.at(i)))
			if _, err := w.Write(buf[:]); err != nil {
				return err
			}
		}
		return nil
	})
}

// floatWeight registers a float32 initializer of the given dims whose
// elements come from src in row-major order.
func (b *builder) floatWeight(name string, src source, dims ...int64) string {
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	return b.addExternal(name, dtFloat, dims, func(w *bufio.Writer) error {
		const chunk = 1 << 14
		buf := make([]byte, 4*chunk)
		for from := 0; from < n; from += chunk {
			m := min(chunk, n-from)
			for j := 0; j < m; j++ {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(src.at(from+j)))
			}
			if _, err := w.Write(buf[:4*m]); err != nil {
				return err
			}
		}
		return nil
	})
}

// int4Weight registers the MatMulNBits B and scales initializers for the
// logical [k, n] matrix src and returns their names. Each block is
// quantized once: the B writer keeps the scales (n*k/32 floats) for the
// scales writer, which runs right after it.
func (b *builder) int4Weight(name string, src source, k, n int) (string, string) {
	blocks := k / blockSize
	var scales []float32
	qb := b.addExternal(name+"_Q4", dtUint8, []int64{int64(n), int64(blocks), blockSize / 2}, func(w *bufio.Writer) error {
		scales = make([]float32, 0, n*blocks)
		codes := make([]byte, blockSize/2)
		for col := 0; col < n; col++ {
			for blk := 0; blk < blocks; blk++ {
				scales = append(scales, quantBlock(src, n, col, blk, codes))
				if _, err := w.Write(codes); err != nil {
					return err
				}
			}
		}
		return nil
	})
	sc := b.addExternal(name+"_scales", dtFloat, []int64{int64(n), int64(blocks)}, func(w *bufio.Writer) error {
		if len(scales) != n*blocks {
			return fmt.Errorf("scales of %s written before its codes", name)
		}
		var buf [4]byte
		for _, s := range scales {
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(s))
			if _, err := w.Write(buf[:]); err != nil {
				return err
			}
		}
		scales = nil
		return nil
	})
	return qb, sc
}
