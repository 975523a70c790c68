package gpu

import (
	"fmt"
	"math"
)

// Matrix names a YCbCr matrix by its Kr, Kb (python/weft/_video.py MATRICES).
type Matrix string

// The matrices the conversion knows.
const (
	BT601     Matrix = "bt601"
	BT709     Matrix = "bt709"
	BT2020    Matrix = "bt2020"
	SMPTE240M Matrix = "smpte240m"
	FCC       Matrix = "fcc"
)

// krkb are the matrices' (Kr, Kb); a var, not constants, so the table
// arithmetic below is float64 at run time exactly as numpy does it.
var krkb = map[Matrix][2]float64{
	BT601:     {0.299, 0.114},
	BT709:     {0.2126, 0.0722},
	BT2020:    {0.2627, 0.0593},
	SMPTE240M: {0.212, 0.087},
	FCC:       {0.30, 0.11},
}

// ColorSpec is what the RGB conversion of a stream depends on.
type ColorSpec struct {
	Matrix Matrix
	Full   bool // full range (else limited: 16-235 luma, 16-240 chroma at 8 bits)
	Bits   int  // sample bit depth, 8 to 16
}

// ColorRule is python/weft/_video.py's color_rule for a stream: its matrix
// from the H.264/HEVC matrix_coefficients code (1 BT.709, 4 FCC, 5/6
// BT.601, 7 SMPTE 240M, 9/10 BT.2020; anything else is unspecified: BT.601
// below 720 lines, else BT.709) and its video_full_range_flag.
func ColorRule(matrixCoefficients int, fullRange bool, height, bits int) ColorSpec {
	m, ok := map[int]Matrix{1: BT709, 4: FCC, 5: BT601, 6: BT601, 7: SMPTE240M, 9: BT2020, 10: BT2020}[matrixCoefficients]
	if !ok {
		m = BT709
		if height < 720 {
			m = BT601
		}
	}
	return ColorSpec{Matrix: m, Full: fullRange, Bits: bits}
}

// tableFrac: table entries are in 1/32 of an 8-bit RGB step.
const tableFrac = 5

// ColorTables are the five int16 lookup tables of a ColorSpec, in 1/32 of
// an 8-bit RGB step: R = Y[y] + RV[v], G = Y[y] + GU[u] + GV[v],
// B = Y[y] + BU[u], each then floor(x/32) clamped to 0..255 (Y carries the
// +1/2 of the rounding). Flat is the five, in that order, as the kernel
// reads them (N entries each).
type ColorTables struct {
	Spec              ColorSpec
	N                 int
	Y, RV, GU, GV, BU []int16
	Flat              []int16
}

// Tables builds the tables of c with the same float64 arithmetic as
// python/weft/_video.py's _tables (numpy rounds half to even; so does this).
func Tables(c ColorSpec) (*ColorTables, error) {
	k, ok := krkb[c.Matrix]
	if !ok {
		return nil, fmt.Errorf("%w: unknown matrix %q", ErrInvalidSegment, c.Matrix)
	}
	if c.Bits < 8 || c.Bits > 16 {
		return nil, fmt.Errorf("%w: %d-bit samples (8 to 16)", ErrInvalidSegment, c.Bits)
	}
	kr, kb := k[0], k[1]
	kg := float64(1.0-kr) - kb
	n := 1 << c.Bits
	one := float64(int(1) << tableFrac)
	q := func(x float64) int16 { return int16(math.RoundToEven(float64(x * one))) }
	t := &ColorTables{Spec: c, N: n, Flat: make([]int16, 5*n)}
	t.Y, t.RV, t.GU, t.GV, t.BU = t.Flat[0:n], t.Flat[n:2*n], t.Flat[2*n:3*n], t.Flat[3*n:4*n], t.Flat[4*n:5*n]
	fn := float64(n)
	rv := float64(2 * float64(1-kr))
	gu := float64(float64(float64(-2*kb)*float64(1-kb)) / kg)
	gv := float64(float64(float64(-2*kr)*float64(1-kr)) / kg)
	bu := float64(2 * float64(1-kb))
	for i := 0; i < n; i++ {
		d := float64(i)
		var ey, cc float64
		if c.Full {
			ey = float64(float64(d/(fn-1)) * 255.0)
			cc = float64(float64(float64(d-fn/2)/(fn-1)) * 255.0)
		} else {
			s := fn / 256
			ey = float64(float64(float64(d-float64(16*s))/float64(219*s)) * 255.0)
			cc = float64(float64(float64(d-float64(128*s))/float64(224*s)) * 255.0)
		}
		t.Y[i] = q(ey + 0.5)
		t.RV[i] = q(float64(rv * cc))
		t.GU[i] = q(float64(gu * cc))
		t.GV[i] = q(float64(gv * cc))
		t.BU[i] = q(float64(bu * cc))
	}
	return t, nil
}

// Frame is one decoded picture on the host, packed without padding exactly
// as `ffmpeg -pix_fmt nv12` (8-bit) or `p010le` (more bits, samples in the
// high bits of little-endian uint16) writes it: Height rows of Width luma
// samples, then (Height+1)/2 rows of (Width+1)/2 interleaved Cb,Cr pairs.
type Frame struct {
	PTS           int64
	Width, Height int
	Bits          int
	Data          []byte
}

// FrameBytes is the size of a packed Frame.
func FrameBytes(width, height, bits int) int {
	bps := 1
	if bits > 8 {
		bps = 2
	}
	return width*height*bps + (height+1)/2*((width+1)/2)*2*bps
}

func clamp8(v int) byte {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return byte(v)
}

// YUV420ToRGB is the reference conversion (the oracle of the GPU tests):
// f to packed RGB uint8 (Height*Width*3 bytes) with t, chroma replicated,
// the same statements as kernels/rgb.cu.
func YUV420ToRGB(f Frame, t *ColorTables) ([]byte, error) {
	if len(f.Data) != FrameBytes(f.Width, f.Height, f.Bits) {
		return nil, fmt.Errorf("%w: frame of %d bytes for %dx%d at %d bits", ErrInvalidSegment, len(f.Data), f.Width, f.Height, f.Bits)
	}
	if f.Bits != t.Spec.Bits {
		return nil, fmt.Errorf("%w: %d-bit frame, %d-bit tables", ErrInvalidSegment, f.Bits, t.Spec.Bits)
	}
	bps, shift := 1, uint(0)
	if f.Bits > 8 {
		bps, shift = 2, uint(16-f.Bits)
	}
	w, h, n := f.Width, f.Height, t.N
	pitch := w * bps
	cpitch := (w + 1) / 2 * 2 * bps
	luma, chroma := f.Data[:pitch*h], f.Data[pitch*h:]
	sample := func(b []byte, i int) int {
		if bps == 1 {
			return int(b[i])
		}
		return int(uint16(b[i])|uint16(b[i+1])<<8) >> shift
	}
	lim := func(v int) int { return min(v, n-1) }
	out := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		c := chroma[(y>>1)*cpitch:]
		for x := 0; x < w; x++ {
			Y := lim(sample(luma, y*pitch+x*bps))
			U := lim(sample(c, (x>>1)*2*bps))
			V := lim(sample(c, (x>>1)*2*bps+bps))
			ty := int(t.Y[Y])
			o := out[(y*w+x)*3:]
			o[0] = clamp8((ty + int(t.RV[V])) >> tableFrac)
			o[1] = clamp8((ty + int(t.GU[U]) + int(t.GV[V])) >> tableFrac)
			o[2] = clamp8((ty + int(t.BU[U])) >> tableFrac)
		}
	}
	return out, nil
}
