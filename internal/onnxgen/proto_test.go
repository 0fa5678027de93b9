package onnxgen

import (
	"encoding/binary"
	"math"
	"testing"
)

// field is one decoded protobuf field: a varint/fixed value or bytes.
type field struct {
	num  int
	wire int
	v    uint64
	b    []byte
}

// decodeWire splits a protobuf message into its fields (test-only reader).
func decodeWire(t *testing.T, b []byte) []field {
	t.Helper()
	var out []field
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("bad tag")
		}
		b = b[n:]
		f := field{num: int(tag >> 3), wire: int(tag & 7)}
		switch f.wire {
		case wireVarint:
			f.v, n = binary.Uvarint(b)
			if n <= 0 {
				t.Fatalf("bad varint")
			}
			b = b[n:]
		case wireFixed32:
			f.v = uint64(binary.LittleEndian.Uint32(b))
			b = b[4:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				t.Fatalf("bad length")
			}
			f.b = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			t.Fatalf("unexpected wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out
}

func fieldsNamed(fs []field, num int) []field {
	var out []field
	for _, f := range fs {
		if f.num == num {
			out = append(out, f)
		}
	}
	return out
}

func one(t *testing.T, fs []field, num int) field {
	t.Helper()
	got := fieldsNamed(fs, num)
	if len(got) != 1 {
		t.Fatalf("field %d occurs %d times, want once", num, len(got))
	}
	return got[0]
}

func TestEncodeModelWireFormat(t *testing.T) {
	ext := &tensor{name: "w", dtype: dtFloat, dims: []int64{2, 3}, location: "model.onnx_data", offset: 4096, length: 24}
	inl := &tensor{name: "c", dtype: dtInt64, dims: []int64{1}, raw: binary.LittleEndian.AppendUint64(nil, uint64(1<<63|5))}
	md := &model{
		irVersion: 8,
		opsets:    []opsetImport{{"", 17}, {"com.microsoft", 1}},
		graphName: "g",
		nodes: []node{{name: "n", opType: "Op", domain: "com.microsoft", inputs: []string{"x", "w"}, outputs: []string{"y"},
			attrs: []attr{attrI("neg", -2), attrF("f", 1.5), attrS("s", "hi"), attrInts("is", 1, -1), attrT("t", inl)}}},
		initializers: []*tensor{ext, inl},
		inputs:       []valueInfo{{name: "x", dtype: dtFloat, shape: []dim{{param: "batch"}, {size: 3}}}},
		outputs:      []valueInfo{{name: "y", dtype: dtFloat16, shape: []dim{{param: "batch"}}}},
	}
	m := decodeWire(t, md.encode())
	if v := one(t, m, 1).v; v != 8 {
		t.Fatalf("ir_version %d", v)
	}
	opsets := fieldsNamed(m, 8)
	if len(opsets) != 2 || string(one(t, decodeWire(t, opsets[1].b), 1).b) != "com.microsoft" {
		t.Fatalf("opset imports wrong")
	}
	g := decodeWire(t, one(t, m, 7).b)

	n := decodeWire(t, one(t, g, 1).b)
	if string(one(t, n, 4).b) != "Op" || string(one(t, n, 7).b) != "com.microsoft" || len(fieldsNamed(n, 1)) != 2 {
		t.Fatalf("node fields wrong")
	}
	attrs := fieldsNamed(n, 5)
	if len(attrs) != 5 {
		t.Fatalf("%d attributes", len(attrs))
	}
	neg := decodeWire(t, attrs[0].b)
	if int64(one(t, neg, 3).v) != -2 || one(t, neg, 20).v != kindInt {
		t.Fatalf("negative int attribute wrong: %+v", neg)
	}
	if f := decodeWire(t, attrs[1].b); math.Float32frombits(uint32(one(t, f, 2).v)) != 1.5 || one(t, f, 20).v != kindFloat {
		t.Fatalf("float attribute wrong")
	}
	if s := decodeWire(t, attrs[2].b); string(one(t, s, 4).b) != "hi" {
		t.Fatalf("string attribute wrong")
	}
	packed := one(t, decodeWire(t, attrs[3].b), 8).b
	a, n1 := binary.Uvarint(packed)
	b, _ := binary.Uvarint(packed[n1:])
	if a != 1 || int64(b) != -1 {
		t.Fatalf("packed ints %d %d", a, int64(b))
	}
	if tt := decodeWire(t, one(t, decodeWire(t, attrs[4].b), 5).b); string(one(t, tt, 8).b) != "c" {
		t.Fatalf("tensor attribute wrong")
	}

	inits := fieldsNamed(g, 5)
	if len(inits) != 2 {
		t.Fatalf("%d initializers", len(inits))
	}
	e := decodeWire(t, inits[0].b)
	if one(t, e, 14).v != 1 || len(fieldsNamed(e, 9)) != 0 {
		t.Fatalf("external tensor must have data_location EXTERNAL and no raw_data")
	}
	entries := map[string]string{}
	for _, kv := range fieldsNamed(e, 13) {
		d := decodeWire(t, kv.b)
		entries[string(one(t, d, 1).b)] = string(one(t, d, 2).b)
	}
	if entries["location"] != "model.onnx_data" || entries["offset"] != "4096" || entries["length"] != "24" {
		t.Fatalf("external data entries %v", entries)
	}
	if dims := fieldsNamed(e, 1); len(dims) != 2 || dims[0].v != 2 || dims[1].v != 3 {
		t.Fatalf("dims wrong")
	}
	if raw := one(t, decodeWire(t, inits[1].b), 9).b; len(raw) != 8 {
		t.Fatalf("inline raw_data %d bytes", len(raw))
	}

	in := decodeWire(t, one(t, g, 11).b)
	tensorType := decodeWire(t, one(t, decodeWire(t, one(t, in, 2).b), 1).b)
	if one(t, tensorType, 1).v != dtFloat {
		t.Fatalf("input elem_type wrong")
	}
	dims := fieldsNamed(decodeWire(t, one(t, tensorType, 2).b), 1)
	if len(dims) != 2 || string(one(t, decodeWire(t, dims[0].b), 2).b) != "batch" || one(t, decodeWire(t, dims[1].b), 1).v != 3 {
		t.Fatalf("input shape wrong")
	}
}

func TestFloat16RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		bits uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001}, {0.000060975552, 0x03ff},
		{1.0009765625, 0x3c01}, {1.00048828125, 0x3c00}, // ties to even
	} {
		if got := float16bits(tc.in); got != tc.bits {
			t.Errorf("float16bits(%g) = %#04x, want %#04x", tc.in, got, tc.bits)
		}
		if tc.bits&0x7c00 != 0x7c00 && float16to32(tc.bits) != tc.in && tc.in != 1.00048828125 {
			t.Errorf("float16to32(%#04x) = %g, want %g", tc.bits, float16to32(tc.bits), tc.in)
		}
	}
}

func TestInt4QuantizationRoundTrip(t *testing.T) {
	w := newWeight(7, "w", 0.5, 0)
	const k, n = 64, 3
	deq := dequantized(w, k, n)
	for i, v := range deq {
		orig := w.at(i)
		col, row := i%n, i/n
		// Error is at most half a step of the block's scale.
		var amax float32
		for j := 0; j < blockSize; j++ {
			amax = max(amax, float32(math.Abs(float64(w.at(((row/blockSize)*blockSize+j)*n+col)))))
		}
		if d := math.Abs(float64(v - orig)); d > float64(amax/7/2)+1e-7 {
			t.Fatalf("element %d: %g vs %g", i, v, orig)
		}
	}
}
