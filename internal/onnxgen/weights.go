package onnxgen

import (
	"encoding/binary"
	"hash/fnv"
	"math"
)

// Weights are not stored anywhere while a model is written: every element is
// a pure function of (seed, tensor name, element index), so the writer can
// stream a tensor in any order and the oracle can rebuild the same values.

// blockSize is the MatMulNBits quantization block along the input dimension.
const blockSize = 32

// weight describes one random tensor: value(i) = offset + scale*u(i), with
// u(i) uniform in [-1, 1).
type weight struct {
	name   string
	key    uint64
	scale  float32
	offset float32
}

func newWeight(seed uint64, name string, scale, offset float32) weight {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(name))
	return weight{name: name, key: h.Sum64(), scale: scale, offset: offset}
}

// at is element i of the tensor (row-major index).
func (w weight) at(i int) float32 {
	// splitmix64 of a per-tensor counter.
	z := w.key + uint64(i+1)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	u := float32(z>>40)*(1.0/(1<<23)) - 1 // [-1, 1)
	return w.offset + w.scale*u
}

// fill writes elements [from, from+len(dst)) into dst.
func (w weight) fill(dst []float32, from int) {
	for j := range dst {
		dst[j] = w.at(from + j)
	}
}

// matrix returns the whole tensor of n elements (oracle use).
func (w weight) matrix(n int) []float32 {
	out := make([]float32, n)
	w.fill(out, 0)
	return out
}

// quantBlock quantizes column n, block b of the logical [k, nCols] matrix w
// (element (r, c) at index r*nCols+c) into 16 bytes of packed 4-bit codes
// (low nibble first) and returns its scale. Codes are round(v/scale)+8
// clamped to [0, 15]; dequantized value is (code-8)*scale.
func quantBlock(w source, nCols, n, b int, codes []byte) float32 {
	var vals [blockSize]float32
	var amax float32
	for j := 0; j < blockSize; j++ {
		v := w.at((b*blockSize+j)*nCols + n)
		vals[j] = v
		if a := float32(math.Abs(float64(v))); a > amax {
			amax = a
		}
	}
	scale := amax / 7
	if scale == 0 {
		scale = 1
	}
	for j := 0; j < blockSize; j += 2 {
		lo := quantCode(vals[j], scale)
		hi := quantCode(vals[j+1], scale)
		codes[j/2] = lo | hi<<4
	}
	return scale
}

func quantCode(v, scale float32) byte {
	q := math.RoundToEven(float64(v/scale)) + 8
	if q < 0 {
		q = 0
	}
	if q > 15 {
		q = 15
	}
	return byte(q)
}

// dequantized returns the logical [k, nCols] matrix after a 4-bit round trip,
// exactly as MatMulNBits sees it (oracle use).
func dequantized(w source, k, nCols int) []float32 {
	out := make([]float32, k*nCols)
	codes := make([]byte, blockSize/2)
	for n := 0; n < nCols; n++ {
		for b := 0; b < k/blockSize; b++ {
			s := quantBlock(w, nCols, n, b, codes)
			for j := 0; j < blockSize; j++ {
				c := codes[j/2]
				if j%2 == 1 {
					c >>= 4
				}
				out[(b*blockSize+j)*nCols+n] = float32(int(c&15)-8) * s
			}
		}
	}
	return out
}

// float16bits converts f to IEEE 754 half precision, rounding to nearest even.
func float16bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case (b>>23)&0xff == 0xff: // inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(r)
}

// float16to32 converts IEEE 754 half precision bits to float32.
func float16to32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 31:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
