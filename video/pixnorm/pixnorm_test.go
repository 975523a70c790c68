package pixnorm

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// roundToGrid is f rounded to nearest even on the grid of a format with
// p significand bits, minimum normal exponent emin (f = m * 2^e, 1 <= m < 2)
// and largest finite value max, by float64 arithmetic (exact here): the
// independent oracle of Float16Bits and BFloat16Bits.
func roundToGrid(f float32, p, emin int, maxv float64) float64 {
	v := float64(f)
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	_, e := math.Frexp(math.Abs(v)) // |v| = fr * 2^e, 0.5 <= fr < 1
	q := math.Ldexp(1, max(e-1, emin)-(p-1))
	r := math.RoundToEven(math.Abs(v)/q) * q
	if r > maxv {
		r = math.Inf(1)
	}
	return math.Copysign(r, v)
}

func half(b uint16) float64 {
	s, e, m := b>>15, int(b>>10&0x1f), float64(b&0x3ff)
	var v float64
	switch e {
	case 0:
		v = math.Ldexp(m, -24)
	case 31:
		v = math.Inf(1)
		if m != 0 {
			v = math.NaN()
		}
	default:
		v = math.Ldexp(1024+m, e-25)
	}
	if s == 1 {
		v = -v
	}
	return v
}

func bfloat(b uint16) float64 { return float64(math.Float32frombits(uint32(b) << 16)) }

// TestFloat16AndBFloat16Bits: the integer conversions round to nearest
// even like a float64 oracle, over every exponent, ties, the overflow
// edges, subnormals and NaN.
func TestFloat16AndBFloat16Bits(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 3))
	var vals []float32
	for e := uint32(0); e < 256; e++ {
		for _, m := range []uint32{0, 1, 0x1000, 0x0fff, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0x18000, 0x7fffff} {
			vals = append(vals, math.Float32frombits(e<<23|m), math.Float32frombits(1<<31|e<<23|m))
		}
	}
	for range 200000 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	vals = append(vals, 65504, 65519.99, 65520, -65520, 3.3895314e38, math.MaxFloat32, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1.8p-24, 0x1p-14, 0x1.ffcp-15)
	for _, f := range vals {
		if math.IsNaN(float64(f)) {
			require.True(t, math.IsNaN(half(Float16Bits(f))), "float16 of NaN %08x", math.Float32bits(f))
			require.True(t, math.IsNaN(bfloat(BFloat16Bits(f))), "bfloat16 of NaN %08x", math.Float32bits(f))
			continue
		}
		want16 := roundToGrid(f, 11, -14, 65504)
		got16 := half(Float16Bits(f))
		require.True(t, want16 == got16 && math.Signbit(want16) == math.Signbit(got16), "float16 of %v (%08x): %v, want %v", f, math.Float32bits(f), got16, want16)
		wantB := roundToGrid(f, 8, -126, 3.3895313892515355e38)
		gotB := bfloat(BFloat16Bits(f))
		require.True(t, wantB == gotB && math.Signbit(wantB) == math.Signbit(gotB), "bfloat16 of %v (%08x): %v, want %v", f, math.Float32bits(f), gotB, wantB)
	}
}

func TestValidate(t *testing.T) {
	ok := Normalize{Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{1, 1, 1}, DType: Float16}
	require.NoError(t, ok.Validate())
	for name, n := range map[string]Normalize{
		"uint8":           {Std: [3]float64{1, 1, 1}, DType: Uint8},
		"no dtype":        {Std: [3]float64{1, 1, 1}},
		"zero std":        {Std: [3]float64{1, 0, 1}, DType: Float32},
		"nan mean":        {Mean: [3]float64{math.NaN()}, Std: [3]float64{1, 1, 1}, DType: Float32},
		"inf std":         {Std: [3]float64{1, 1, math.Inf(1)}, DType: Float32},
		"minus std":       {Std: [3]float64{-1, 1, 1}, DType: BFloat16},
		"std 0 in f32":    {Std: [3]float64{1, 1e-50, 1}, DType: Float32},
		"mean inf in f32": {Mean: [3]float64{0, 1e39, 0}, Std: [3]float64{1, 1, 1}, DType: Float32},
	} {
		t.Run(name, func(t *testing.T) { require.ErrorIs(t, n.Validate(), ErrInvalid) })
	}
}

// TestRGB: RGB is Value of each element in the DType's encoding, for
// every uint8 value in every channel; a dtype that is not a normalised
// one gives nothing.
func TestRGB(t *testing.T) {
	rgb := make([]byte, 256*3)
	for i := range 256 {
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = byte(i), byte(255-i), byte(i*7)
	}
	for _, dt := range []DType{Float32, Float16, BFloat16} {
		t.Run(string(dt), func(t *testing.T) {
			n := Normalize{Mean: [3]float64{0.485, 0.456, 0.406}, Std: [3]float64{0.229, 0.224, 0.225}, DType: dt}
			got := n.RGB(rgb)
			require.Len(t, got, len(rgb)*dt.Size())
			for i, x := range rgb {
				y := n.Value(x, i%3)
				switch dt {
				case Float32:
					require.Equal(t, math.Float32bits(y), binary.LittleEndian.Uint32(got[4*i:]), "value %d", i)
				case Float16:
					require.Equal(t, Float16Bits(y), binary.LittleEndian.Uint16(got[2*i:]), "value %d", i)
				case BFloat16:
					require.Equal(t, BFloat16Bits(y), binary.LittleEndian.Uint16(got[2*i:]), "value %d", i)
				}
			}
		})
	}
	require.Nil(t, Normalize{DType: Uint8}.RGB(rgb))
}

// Example: ImageNet's normalisation of a black, a mid-grey and a white
// pixel as float16.
func Example() {
	n := Normalize{Mean: [3]float64{0.485, 0.456, 0.406}, Std: [3]float64{0.229, 0.224, 0.225}, DType: Float16}
	out := n.RGB([]byte{0, 0, 0, 128, 128, 128, 255, 255, 255})
	for i := 0; i < len(out); i += 2 {
		if i > 0 {
			fmt.Print(" ")
		}
		fmt.Printf("%04x", binary.LittleEndian.Uint16(out[i:]))
	}
	fmt.Println()
	fmt.Printf("%.4f\n", n.Value(255, 0))
	// Output:
	// c03c c012 bf38 2cbd 3291 36d3 407f 40db 4148
	// 2.2489
}
