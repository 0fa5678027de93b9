package onnx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// valueSig is one graph input or output as the ONNX file declares it.
type valueSig struct {
	name   string
	tensor bool    // a tensor (not a sequence, map, ...)
	elem   int32   // TensorProto.DataType; the runtime's element type enum matches it
	dims   []int64 // -1 for a dimension without a fixed size
}

// readSignature reads the declared inputs and outputs of the ONNX model at
// path without loading it: it walks the protobuf, skipping nodes and weight
// payloads, so a model of several gigabytes costs a sequential read of its
// graph file and no memory beyond the signature. Inputs that are also
// initializers (overridable weights) are left out, as the runtime does.
func readSignature(path string) (ins, outs []valueSig, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	return parseSignature(bufio.NewReaderSize(f, 1<<20), st.Size())
}

// Field numbers of onnx.proto.
const (
	modelGraph       = 7
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12
	tensorName       = 8
	valueName        = 1
	valueType        = 2
	typeTensor       = 1
	tensorElemType   = 1
	tensorShape      = 2
	shapeDim         = 1
	dimValue         = 1
)

// maxValueInfo bounds one input or output description read into memory.
const maxValueInfo = 1 << 20

var errProto = errors.New("not an ONNX model (malformed protobuf)")

type pbReader struct {
	r interface {
		io.Reader
		io.ByteReader
	}
	n int64 // bytes left in the current message
}

func (p *pbReader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if p.n <= 0 {
			return 0, errProto
		}
		c, err := p.r.ReadByte()
		if err != nil {
			return 0, errProto
		}
		p.n--
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errProto
}

func (p *pbReader) tag() (field int, wire int, err error) {
	v, err := p.varint()
	if err != nil {
		return 0, 0, err
	}
	if v>>3 == 0 || v>>3 > 1<<29 {
		return 0, 0, errProto
	}
	return int(v >> 3), int(v & 7), nil
}

// length reads a length prefix that must fit the current message.
func (p *pbReader) length() (int64, error) {
	v, err := p.varint()
	if err != nil {
		return 0, err
	}
	if v > uint64(p.n) {
		return 0, errProto
	}
	return int64(v), nil
}

func (p *pbReader) discard(n int64) error {
	if n > p.n {
		return errProto
	}
	var err error
	if br, ok := p.r.(*bufio.Reader); ok {
		var k int
		for n > 0 && err == nil {
			step := int(min(n, 1<<30))
			k, err = br.Discard(step)
			n -= int64(k)
			p.n -= int64(k)
		}
	} else {
		var k int64
		k, err = io.CopyN(io.Discard, p.r, n)
		p.n -= k
	}
	if err != nil {
		return errProto
	}
	return nil
}

func (p *pbReader) skip(wire int) error {
	switch wire {
	case 0:
		_, err := p.varint()
		return err
	case 1:
		return p.discard(8)
	case 2:
		n, err := p.length()
		if err != nil {
			return err
		}
		return p.discard(n)
	case 5:
		return p.discard(4)
	}
	return errProto
}

func (p *pbReader) bytes(n int64) ([]byte, error) {
	if n > p.n {
		return nil, errProto
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(p.r, b); err != nil {
		return nil, errProto
	}
	p.n -= n
	return b, nil
}

// sub runs fn over the next n bytes as a message of their own.
func (p *pbReader) sub(n int64, fn func(*pbReader) error) error {
	if n > p.n {
		return errProto
	}
	inner := &pbReader{r: p.r, n: n}
	if err := fn(inner); err != nil {
		return err
	}
	if inner.n != 0 {
		return errProto
	}
	p.n -= n
	return nil
}

func parseSignature(r interface {
	io.Reader
	io.ByteReader
}, size int64) (ins, outs []valueSig, err error) {
	p := &pbReader{r: r, n: size}
	var sawGraph bool
	var inits map[string]bool
	for p.n > 0 {
		field, wire, err := p.tag()
		if err != nil {
			return nil, nil, err
		}
		if field != modelGraph || wire != 2 {
			if err := p.skip(wire); err != nil {
				return nil, nil, err
			}
			continue
		}
		n, err := p.length()
		if err != nil {
			return nil, nil, err
		}
		sawGraph = true
		err = p.sub(n, func(g *pbReader) error {
			var err error
			ins, outs, inits, err = parseGraph(g)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if !sawGraph {
		return nil, nil, errors.New("the file holds no graph")
	}
	kept := ins[:0]
	for _, in := range ins {
		if !inits[in.name] {
			kept = append(kept, in)
		}
	}
	return kept, outs, nil
}

func parseGraph(g *pbReader) (ins, outs []valueSig, inits map[string]bool, err error) {
	inits = map[string]bool{}
	for g.n > 0 {
		field, wire, err := g.tag()
		if err != nil {
			return nil, nil, nil, err
		}
		if wire != 2 || (field != graphInput && field != graphOutput && field != graphInitializer) {
			if err := g.skip(wire); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		n, err := g.length()
		if err != nil {
			return nil, nil, nil, err
		}
		if field == graphInitializer {
			err = g.sub(n, func(t *pbReader) error {
				name, err := initializerName(t)
				if name != "" {
					inits[name] = true
				}
				return err
			})
			if err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		if n > maxValueInfo {
			return nil, nil, nil, fmt.Errorf("graph input/output description of %d bytes", n)
		}
		raw, err := g.bytes(n)
		if err != nil {
			return nil, nil, nil, err
		}
		v, err := parseValueInfo(raw)
		if err != nil {
			return nil, nil, nil, err
		}
		if field == graphInput {
			ins = append(ins, v)
		} else {
			outs = append(outs, v)
		}
	}
	return ins, outs, inits, nil
}

// initializerName reads a TensorProto's name and skips its payload.
func initializerName(t *pbReader) (string, error) {
	var name string
	for t.n > 0 {
		field, wire, err := t.tag()
		if err != nil {
			return "", err
		}
		if field == tensorName && wire == 2 {
			n, err := t.length()
			if err != nil {
				return "", err
			}
			b, err := t.bytes(n)
			if err != nil {
				return "", err
			}
			name = string(b)
			continue
		}
		if err := t.skip(wire); err != nil {
			return "", err
		}
	}
	return name, nil
}

func parseValueInfo(raw []byte) (valueSig, error) {
	var v valueSig
	p := &pbReader{r: bytes.NewReader(raw), n: int64(len(raw))}
	for p.n > 0 {
		field, wire, err := p.tag()
		if err != nil {
			return v, err
		}
		switch {
		case field == valueName && wire == 2:
			n, err := p.length()
			if err != nil {
				return v, err
			}
			b, err := p.bytes(n)
			if err != nil {
				return v, err
			}
			v.name = string(b)
		case field == valueType && wire == 2:
			n, err := p.length()
			if err != nil {
				return v, err
			}
			if err := p.sub(n, func(t *pbReader) error { return parseType(t, &v) }); err != nil {
				return v, err
			}
		default:
			if err := p.skip(wire); err != nil {
				return v, err
			}
		}
	}
	return v, nil
}

func parseType(t *pbReader, v *valueSig) error {
	for t.n > 0 {
		field, wire, err := t.tag()
		if err != nil {
			return err
		}
		if field != typeTensor || wire != 2 {
			if err := t.skip(wire); err != nil {
				return err
			}
			continue
		}
		v.tensor = true
		n, err := t.length()
		if err != nil {
			return err
		}
		err = t.sub(n, func(tt *pbReader) error {
			for tt.n > 0 {
				field, wire, err := tt.tag()
				if err != nil {
					return err
				}
				switch {
				case field == tensorElemType && wire == 0:
					e, err := tt.varint()
					if err != nil {
						return err
					}
					v.elem = int32(e)
				case field == tensorShape && wire == 2:
					n, err := tt.length()
					if err != nil {
						return err
					}
					if err := tt.sub(n, func(s *pbReader) error { return parseShape(s, v) }); err != nil {
						return err
					}
				default:
					if err := tt.skip(wire); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func parseShape(s *pbReader, v *valueSig) error {
	for s.n > 0 {
		field, wire, err := s.tag()
		if err != nil {
			return err
		}
		if field != shapeDim || wire != 2 {
			if err := s.skip(wire); err != nil {
				return err
			}
			continue
		}
		n, err := s.length()
		if err != nil {
			return err
		}
		d := int64(-1)
		err = s.sub(n, func(dp *pbReader) error {
			for dp.n > 0 {
				field, wire, err := dp.tag()
				if err != nil {
					return err
				}
				if field == dimValue && wire == 0 {
					x, err := dp.varint()
					if err != nil {
						return err
					}
					if int64(x) >= 0 {
						d = int64(x)
					}
					continue
				}
				if err := dp.skip(wire); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		v.dims = append(v.dims, d)
	}
	return nil
}
