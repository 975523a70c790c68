package gpu

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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

// normSets are the normalisations the tests run: ImageNet's, values that
// land on float16 and bfloat16 ties, and outputs past float16's (and
// float32's) range.
var normSets = map[string][2][3]float32{
	"imagenet":  {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}},
	"bf16 ties": {{-1.00390625, -1.01171875, 1.01171875}, {1, 1, 1}},
	"f16 ties":  {{-(1 + 0x1p-11), -(1 + 3*0x1p-11), 1 + 3*0x1p-11}, {1, 1, 1}},
	"huge":      {{0.5, -3, 0}, {1e-6, 3e-5, 1e-45}},
}

const pyNormalize = `
import sys, numpy as np
from weft._video import normalize
mean, std = [float(v) for v in sys.argv[3].split(",")], [float(v) for v in sys.argv[4].split(",")]
v = np.arange(256, dtype=np.uint8)
rgb = np.stack([v, np.roll(v, 85), np.roll(v, 170)], axis=-1).reshape(1, 16, 16, 3)
open(sys.argv[1], "wb").write(np.ascontiguousarray(normalize(rgb, mean, std, sys.argv[2])).tobytes())
`

// TestNormalizeRGBMatchesPython: NormalizeRGB is python's normalize (the
// CPU path) byte for byte, for every uint8 value in every channel.
func TestNormalizeRGBMatchesPython(t *testing.T) {
	py := pythonWithNumpy(t)
	_, file, _, _ := runtime.Caller(0)
	rgb := make([]byte, 256*3)
	for i := range 256 {
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = byte(i), byte((i+256-85)%256), byte((i+256-170)%256)
	}
	dir := t.TempDir()
	for name, set := range normSets {
		for _, dt := range []DType{Float32, Float16, BFloat16} {
			t.Run(name+"/"+string(dt), func(t *testing.T) {
				n := Normalize{Mean: set[0], Std: set[1], DType: dt}
				require.NoError(t, n.Validate())
				join := func(v [3]float32) string {
					s := make([]string, 3)
					for i, f := range v {
						s[i] = strconv.FormatFloat(float64(f), 'g', -1, 32)
					}
					return strings.Join(s, ",")
				}
				out := filepath.Join(dir, "n.raw")
				cmd := exec.Command(py, "-c", pyNormalize, out, string(dt), join(n.Mean), join(n.Std))
				cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(filepath.Dir(filepath.Dir(file)), "python"))
				b, err := cmd.CombinedOutput()
				require.NoError(t, err, string(b))
				want, err := os.ReadFile(out)
				require.NoError(t, err)
				require.Equal(t, want, NormalizeRGB(rgb, n))
			})
		}
	}
}

func TestNormalizeValidate(t *testing.T) {
	ok := Normalize{Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{1, 1, 1}, DType: Float16}
	require.NoError(t, ok.Validate())
	for name, n := range map[string]Normalize{
		"uint8":     {Std: [3]float32{1, 1, 1}, DType: Uint8},
		"no dtype":  {Std: [3]float32{1, 1, 1}},
		"zero std":  {Std: [3]float32{1, 0, 1}, DType: Float32},
		"nan mean":  {Mean: [3]float32{float32(math.NaN())}, Std: [3]float32{1, 1, 1}, DType: Float32},
		"inf std":   {Std: [3]float32{1, 1, float32(math.Inf(1))}, DType: Float32},
		"minus std": {Std: [3]float32{-1, 1, 1}, DType: BFloat16},
	} {
		t.Run(name, func(t *testing.T) { require.ErrorIs(t, n.Validate(), ErrInvalidSegment) })
	}
}
