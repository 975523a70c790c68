package pixnorm

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DType is the element type of decoded frames: Uint8 RGB, or one of the
// normalised floats (Normalize). Its string is the name the wire, the
// device descriptors and python use.
type DType string

// The frame dtypes.
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

// Normalized says whether t is a dtype Normalize makes: Float32, Float16
// or BFloat16.
func (t DType) Normalized() bool { return t == Float32 || t == Float16 || t == BFloat16 }

// Normalize is a normalisation: the package's rule with Mean and Std (as
// given, e.g. written in a window spec; the rule uses them rounded to
// float32, Mean32 and Std32) and the DType the values are rounded to.
type Normalize struct {
	Mean, Std [3]float64
	DType     DType // Float32, Float16 or BFloat16
}

// Mean32 and Std32 are the numbers the rule uses: Mean and Std rounded to
// float32.
func (n Normalize) Mean32() [3]float32 { return to32(n.Mean) }

// Std32: see Mean32.
func (n Normalize) Std32() [3]float32 { return to32(n.Std) }

func to32(v [3]float64) [3]float32 { return [3]float32{float32(v[0]), float32(v[1]), float32(v[2])} }

// Equal says whether n and o make the same values: the same DType and
// the same Mean32 and Std32 (Mean and Std may differ beyond float32).
func (n Normalize) Equal(o Normalize) bool {
	return n.DType == o.DType && n.Mean32() == o.Mean32() && n.Std32() == o.Std32()
}

// ValidMean says whether m may be a mean: finite once rounded to float32.
func ValidMean(m float64) bool {
	m32 := float64(float32(m))
	return !math.IsNaN(m32) && !math.IsInf(m32, 0)
}

// ValidStd says whether s may be a std: finite and above 0 once rounded
// to float32 (so the rule divides by a positive float32).
func ValidStd(s float64) bool {
	s32 := float64(float32(s))
	return s32 > 0 && !math.IsInf(s32, 0)
}

// Validate refuses a DType that is not a normalised one, a mean that is
// not ValidMean and a std that is not ValidStd (ErrInvalid).
func (n Normalize) Validate() error {
	if !n.DType.Normalized() {
		return fmt.Errorf("%w: dtype %q (%s, %s or %s)", ErrInvalid, n.DType, Float32, Float16, BFloat16)
	}
	for c := range 3 {
		if !ValidMean(n.Mean[c]) || !ValidStd(n.Std[c]) {
			return fmt.Errorf("%w: mean %v and std %v (finite in float32; std above 0)", ErrInvalid, n.Mean, n.Std)
		}
	}
	return nil
}

// Value is the rule's float32 y of value x of channel c.
func (n Normalize) Value(x uint8, c int) float32 {
	return value(x, float32(n.Mean[c]), float32(n.Std[c]))
}

// value is the rule in float32, each operation rounded (the explicit
// conversions forbid a fused multiply-add).
func value(x uint8, mean, std float32) float32 {
	q := float32(float32(x) / 255.0)
	d := float32(q - mean)
	return float32(d / std)
}

// RGB is the reference of the normalised frames: the packed RGB uint8
// values of rgb ([..., 3]) as n's DType, little-endian,
// len(rgb)*n.DType.Size() bytes (none for a DType that is not a
// normalised one).
func (n Normalize) RGB(rgb []byte) []byte {
	if !n.DType.Normalized() {
		return nil
	}
	es := n.DType.Size()
	m, s := n.Mean32(), n.Std32()
	out := make([]byte, len(rgb)*es)
	for i, x := range rgb {
		y := value(x, m[i%3], s[i%3])
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
