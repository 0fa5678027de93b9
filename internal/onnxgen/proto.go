package onnxgen

import (
	"encoding/binary"
	"math"
	"strconv"
)

// This file encodes the subset of the ONNX protobuf schema (onnx.proto, IR
// version 8) the generator needs, straight to the protobuf wire format. Field
// numbers are those of onnx.proto; nested messages are encoded into their own
// buffers and appended length-prefixed.

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pb is a protobuf message under construction.
type pb struct{ b []byte }

func (m *pb) tag(field, wire int) { m.varint(uint64(field)<<3 | uint64(wire)) }

func (m *pb) varint(v uint64) { m.b = binary.AppendUvarint(m.b, v) }

// int64 writes a varint field; negative values take ten bytes, as protobuf
// encodes int64 in two's complement.
func (m *pb) int64(field int, v int64) {
	m.tag(field, wireVarint)
	m.varint(uint64(v))
}

func (m *pb) float32(field int, v float32) {
	m.tag(field, wireFixed32)
	m.b = binary.LittleEndian.AppendUint32(m.b, math.Float32bits(v))
}

func (m *pb) bytes(field int, v []byte) {
	m.tag(field, wireBytes)
	m.varint(uint64(len(v)))
	m.b = append(m.b, v...)
}

func (m *pb) string(field int, v string) {
	m.tag(field, wireBytes)
	m.varint(uint64(len(v)))
	m.b = append(m.b, v...)
}

func (m *pb) message(field int, sub *pb) { m.bytes(field, sub.b) }

// packedInt64 writes a repeated int64 field in packed form.
func (m *pb) packedInt64(field int, vs []int64) {
	var p pb
	for _, v := range vs {
		p.varint(uint64(v))
	}
	m.bytes(field, p.b)
}

// packedFloat32 writes a repeated float field in packed form.
func (m *pb) packedFloat32(field int, vs []float32) {
	p := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(v))
	}
	m.bytes(field, p)
}

// ONNX TensorProto.DataType values.
const (
	dtFloat   = 1
	dtUint8   = 2
	dtInt8    = 3
	dtInt32   = 6
	dtInt64   = 7
	dtBool    = 9
	dtFloat16 = 10
)

// dtypeSize is the byte size of one element of an ONNX data type.
func dtypeSize(dt int) int {
	switch dt {
	case dtFloat, dtInt32:
		return 4
	case dtInt64:
		return 8
	case dtFloat16:
		return 2
	default:
		return 1
	}
}

// ONNX AttributeProto.AttributeType values.
const (
	kindFloat  = 1
	kindInt    = 2
	kindString = 3
	kindTensor = 4
	kindGraph  = 5
	kindFloats = 6
	kindInts   = 7
)

// tensor is a TensorProto: either raw bytes held inline, or a reference to a
// range of the external data file.
type tensor struct {
	name  string
	dtype int
	dims  []int64
	raw   []byte // inline data; nil when external

	// External data: where the bytes live in the data file.
	location       string
	offset, length int64
}

func (t *tensor) encode() *pb {
	var m pb
	for _, d := range t.dims {
		m.int64(1, d)
	}
	m.int64(2, int64(t.dtype))
	if t.name != "" {
		m.string(8, t.name)
	}
	if t.location != "" {
		for _, kv := range [][2]string{
			{"location", t.location},
			{"offset", itoa(t.offset)},
			{"length", itoa(t.length)},
		} {
			var e pb
			e.string(1, kv[0])
			e.string(2, kv[1])
			m.message(13, &e)
		}
		m.int64(14, 1) // data_location = EXTERNAL
		return &m
	}
	m.bytes(9, t.raw)
	return &m
}

// attr is an AttributeProto.
type attr struct {
	name   string
	kind   int
	i      int64
	f      float32
	s      string
	ints   []int64
	floats []float32
	t      *tensor
	g      *subgraph
}

// subgraph is the GraphProto of a control-flow branch (If): nodes and
// outputs, no inputs; it may read any value of the enclosing graph.
type subgraph struct {
	name    string
	nodes   []node
	outputs []valueInfo
}

func (sg *subgraph) encode() *pb {
	var g pb
	for i := range sg.nodes {
		g.message(1, sg.nodes[i].encode())
	}
	g.string(2, sg.name)
	for i := range sg.outputs {
		g.message(12, sg.outputs[i].encode())
	}
	return &g
}

func attrG(name string, g *subgraph) attr { return attr{name: name, kind: kindGraph, g: g} }

func attrI(name string, v int64) attr       { return attr{name: name, kind: kindInt, i: v} }
func attrF(name string, v float32) attr     { return attr{name: name, kind: kindFloat, f: v} }
func attrS(name, v string) attr             { return attr{name: name, kind: kindString, s: v} }
func attrInts(name string, v ...int64) attr { return attr{name: name, kind: kindInts, ints: v} }
func attrT(name string, t *tensor) attr     { return attr{name: name, kind: kindTensor, t: t} }

func (a *attr) encode() *pb {
	var m pb
	m.string(1, a.name)
	switch a.kind {
	case kindFloat:
		m.float32(2, a.f)
	case kindInt:
		m.int64(3, a.i)
	case kindString:
		m.string(4, a.s)
	case kindTensor:
		m.message(5, a.t.encode())
	case kindGraph:
		m.message(6, a.g.encode())
	case kindFloats:
		m.packedFloat32(7, a.floats)
	case kindInts:
		m.packedInt64(8, a.ints)
	}
	m.int64(20, int64(a.kind))
	return &m
}

// node is a NodeProto.
type node struct {
	name    string
	opType  string
	domain  string
	inputs  []string
	outputs []string
	attrs   []attr
}

func (n *node) encode() *pb {
	var m pb
	for _, in := range n.inputs {
		m.string(1, in)
	}
	for _, out := range n.outputs {
		m.string(2, out)
	}
	m.string(3, n.name)
	m.string(4, n.opType)
	for i := range n.attrs {
		m.message(5, n.attrs[i].encode())
	}
	if n.domain != "" {
		m.string(7, n.domain)
	}
	return &m
}

// dim is one dimension of a value's shape: a fixed size or a symbolic name.
type dim struct {
	size  int64
	param string
}

// valueInfo is a ValueInfoProto for a tensor-typed graph input or output.
type valueInfo struct {
	name  string
	dtype int
	shape []dim
}

func (v *valueInfo) encode() *pb {
	var shape pb
	for _, d := range v.shape {
		var dm pb
		if d.param != "" {
			dm.string(2, d.param)
		} else {
			dm.int64(1, d.size)
		}
		shape.message(1, &dm)
	}
	var tt pb // TypeProto.Tensor
	tt.int64(1, int64(v.dtype))
	tt.message(2, &shape)
	var typ pb // TypeProto
	typ.message(1, &tt)
	var m pb
	m.string(1, v.name)
	m.message(2, &typ)
	return &m
}

// opsetImport is an OperatorSetIdProto.
type opsetImport struct {
	domain  string
	version int64
}

// model is a ModelProto with its single graph.
type model struct {
	irVersion    int64
	opsets       []opsetImport
	producer     string
	producerVer  string
	graphName    string
	nodes        []node
	initializers []*tensor
	inputs       []valueInfo
	outputs      []valueInfo
	metadata     [][2]string
}

func (md *model) encode() []byte {
	var g pb
	for i := range md.nodes {
		g.message(1, md.nodes[i].encode())
	}
	g.string(2, md.graphName)
	for _, t := range md.initializers {
		g.message(5, t.encode())
	}
	for i := range md.inputs {
		g.message(11, md.inputs[i].encode())
	}
	for i := range md.outputs {
		g.message(12, md.outputs[i].encode())
	}

	var m pb
	m.int64(1, md.irVersion)
	m.string(2, md.producer)
	m.string(3, md.producerVer)
	m.message(7, &g)
	for _, o := range md.opsets {
		var op pb
		if o.domain != "" {
			op.string(1, o.domain)
		}
		op.int64(2, o.version)
		m.message(8, &op)
	}
	for _, kv := range md.metadata {
		var e pb
		e.string(1, kv[0])
		e.string(2, kv[1])
		m.message(14, &e)
	}
	return m.b
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
