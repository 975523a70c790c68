package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DType is the element type of a device tensor (a descriptor's "dtype").
type DType string

// The frame dtypes: RGB uint8, or normalised floats (Normalize).
const (
	Uint8    DType = "uint8"
	Float32  DType = "float32"
	Float16  DType = "float16"
	BFloat16 DType = "bfloat16"
)

// Size is the bytes of one element; 0 for an unknown dtype.
func (t DType) Size() int {
	switch t {
	case Uint8:
		return 1
	case Float16, BFloat16:
		return 2
	case Float32:
		return 4
	}
	return 0
}

// kind is the dtype's number in the kernels' out_kind argument (rgb.cu).
func (t DType) kind() uint32 {
	switch t {
	case Float32:
		return 1
	case Float16:
		return 2
	case BFloat16:
		return 3
	}
	return 0
}

// Normalize is a window's normalisation (python weft.Video(normalize=,
// dtype=); docs/python.md "Video windows"): each RGB value x, uint8 after
// the resize, becomes y = (float32(x)/255 - Mean[c]) / Std[c] in IEEE
// float32, one rounding per operation (no fused multiply-add), then DType
// rounded to nearest even: Float32 as is, Float16 an IEEE half (overflow
// to inf), BFloat16 the top 16 bits of the float32 rounded (a NaN stays a
// NaN).
type Normalize struct {
	Mean, Std [3]float32
	DType     DType // Float32, Float16 or BFloat16
}

// Validate refuses a dtype that is not a float one, a non-finite mean and
// a std that is not finite and above 0.
func (n Normalize) Validate() error {
	if n.DType != Float32 && n.DType != Float16 && n.DType != BFloat16 {
		return fmt.Errorf("%w: normalise to dtype %q (float32, float16 or bfloat16)", ErrInvalidSegment, n.DType)
	}
	for c := range 3 {
		m, s := float64(n.Mean[c]), float64(n.Std[c])
		if math.IsNaN(m) || math.IsInf(m, 0) || math.IsInf(s, 0) || !(s > 0) {
			return fmt.Errorf("%w: normalise with mean %v and std %v (finite; std above 0)", ErrInvalidSegment, n.Mean, n.Std)
		}
	}
	return nil
}

// Value is the rule's float32 y of value x of channel c.
func (n Normalize) Value(x uint8, c int) float32 {
	q := float32(float32(x) / 255.0)
	d := float32(q - n.Mean[c])
	return float32(d / n.Std[c])
}

// NormalizeRGB is the reference of the kernels' normalised output: the
// packed RGB uint8 values of rgb ([..., 3]) as n's DType, little-endian,
// len(rgb)*n.DType.Size() bytes.
func NormalizeRGB(rgb []byte, n Normalize) []byte {
	es := n.DType.Size()
	out := make([]byte, len(rgb)*es)
	for i, x := range rgb {
		y := n.Value(x, i%3)
		switch n.DType {
		case Float32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(y))
		case Float16:
			binary.LittleEndian.PutUint16(out[2*i:], Float16Bits(y))
		case BFloat16:
			binary.LittleEndian.PutUint16(out[2*i:], BFloat16Bits(y))
		}
	}
	return out
}

// Float16Bits is f as an IEEE binary16, rounded to nearest even (beyond
// 65504 + half an ulp: inf; a NaN stays a quiet NaN), with the integer
// operations of rgb.cu's f32_to_f16.
func Float16Bits(f float32) uint16 {
	x := math.Float32bits(f)
	sign := (x >> 16) & 0x8000
	a := x & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return uint16(sign | 0x7e00 | (a>>13)&0x3ff)
	case a >= 0x477ff000: // 65520 and above (and inf): inf
		return uint16(sign | 0x7c00)
	case a >= 0x38800000: // a normal half: rebias the exponent, round the low 13 bits
		r := a - 0x38000000
		r += 0xfff + (r>>13)&1
		return uint16(sign | r>>13)
	case a <= 0x33000000: // up to 2^-25 (a tie with 0, which is even): 0
		return uint16(sign)
	}
	// A subnormal half: the 24-bit significand in units of 2^-24.
	e := a >> 23 // 102..112
	m := a&0x7fffff | 0x800000
	shift := 126 - e // 14..24
	q := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return uint16(sign | q)
}

// BFloat16Bits is f as a bfloat16: its top 16 bits rounded to nearest
// even (overflow: inf; a NaN stays a quiet NaN), as rgb.cu's f32_to_bf16.
func BFloat16Bits(f float32) uint16 {
	x := math.Float32bits(f)
	if x&0x7fffffff > 0x7f800000 {
		return uint16(x>>16 | 0x40)
	}
	return uint16((x + 0x7fff + (x>>16)&1) >> 16)
}
