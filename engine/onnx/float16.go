package onnx

import "math"

// halfToFloat converts an IEEE 754 binary16 value to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0: // zero
		return math.Float32frombits(sign)
	}
	// subnormal: normalise
	e := uint32(113)
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	frac &= 0x3ff
	return math.Float32frombits(sign | e<<23 | frac<<13)
}
