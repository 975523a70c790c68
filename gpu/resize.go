package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ResizeFilter is one axis of the resize of python/weft/_video.py
// (resize, _weights): output o is the float32 sum, in input order, of
// input Start[o]+k times W[o*Taps+k] for k < Count[o]. The weights are
// python's matrix rows with the zeros at both ends left out (a zero
// term adds nothing to the sum, in any order).
type ResizeFilter struct {
	In, Out int
	Taps    int       // the most inputs one output reads
	Start   []int32   // per output: its first input
	Count   []int32   // per output: how many inputs it reads
	W       []float32 // Out*Taps: output o's weights at W[o*Taps : o*Taps+Count[o]]
}

// ResizeWeights is python's _weights(nIn, nOut), bit for bit: bilinear
// with antialiasing (PIL's BILINEAR), a triangle filter of radius
// max(1, nIn/nOut) input pixels around each output pixel's centre, in
// float64, each row normalised by its sum (numpy's pairwise summation),
// then rounded to float32.
func ResizeWeights(nIn, nOut int) (*ResizeFilter, error) {
	if nIn < 1 || nOut < 1 {
		return nil, fmt.Errorf("%w: resize of %d pixels to %d", ErrInvalidSegment, nIn, nOut)
	}
	scale := float64(nIn) / float64(nOut)
	support := math.Max(scale, 1.0)
	rows := make([][]float32, nOut)
	first := make([]int, nOut)
	taps := 0
	row := make([]float64, nIn)
	for o := range nOut {
		centre := float64(float64(o)+0.5) * scale
		for i := range nIn {
			x := float64(float64(i)+0.5-centre) / support
			row[i] = math.Max(1.0-math.Abs(x), 0)
		}
		sum := 0 + pairwiseSum(row)
		lo, hi := -1, -1
		w32 := make([]float32, nIn)
		for i := range nIn {
			w32[i] = float32(row[i] / sum)
			if w32[i] != 0 {
				if lo < 0 {
					lo = i
				}
				hi = i
			}
		}
		if lo < 0 { // cannot happen: the input pixel nearest the centre has a weight
			return nil, fmt.Errorf("%w: resize of %d pixels to %d: output %d has no weight", ErrInvalidSegment, nIn, nOut, o)
		}
		first[o], rows[o] = lo, w32[lo:hi+1]
		taps = max(taps, hi+1-lo)
	}
	f := &ResizeFilter{In: nIn, Out: nOut, Taps: taps, Start: make([]int32, nOut), Count: make([]int32, nOut), W: make([]float32, nOut*taps)}
	for o, r := range rows {
		f.Start[o], f.Count[o] = int32(first[o]), int32(len(r))
		copy(f.W[o*taps:], r)
	}
	return f, nil
}

// pairwiseSum is numpy's pairwise_sum for float64 (what ndarray.sum does
// along a contiguous axis): blocks of at most 128 summed with eight
// accumulators, larger ones split in two.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range 8 {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// deviceBytes is the filter as the resize kernels read it: Out int32
// starts, Out int32 counts, then Out*Taps float32 weights, little-endian.
func (f *ResizeFilter) deviceBytes() []byte {
	b := make([]byte, 0, 4*(2*f.Out+len(f.W)))
	for _, v := range f.Start {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	for _, v := range f.Count {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	for _, v := range f.W {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// ResizeRGB is the reference resize (the oracle of the device's): packed
// RGB uint8 of h×w to oh×ow with python's _weights, in float32, the
// vertical pass first (python's Wh @ x @ Ww.T) into a float32 h-resized
// intermediate, then the horizontal one, each output the sum of its terms
// in input order with every product and sum rounded to float32 (no fused
// multiply-add), then rounded half to even (np.rint) and clamped to
// 0..255: the same statements as kernels/rgb.cu's weft_yuv420_to_rgb_vresize
// and weft_rgb_hresize. Python's BLAS sums in its own order, so python's
// resize may differ from this by 1 in a few values.
func ResizeRGB(rgb []byte, h, w, oh, ow int) ([]byte, error) {
	if h < 1 || w < 1 || len(rgb) != h*w*3 {
		return nil, fmt.Errorf("%w: %d bytes of RGB for %dx%d", ErrInvalidSegment, len(rgb), w, h)
	}
	vf, err := ResizeWeights(h, oh)
	if err != nil {
		return nil, err
	}
	hf, err := ResizeWeights(w, ow)
	if err != nil {
		return nil, err
	}
	tmp := make([]float32, oh*w*3)
	for oy := range oh {
		start, wts := int(vf.Start[oy]), vf.W[oy*vf.Taps:oy*vf.Taps+int(vf.Count[oy])]
		for x := range w {
			for c := range 3 {
				var s float32
				for k, wk := range wts {
					s = float32(s + float32(wk*float32(rgb[((start+k)*w+x)*3+c])))
				}
				tmp[(oy*w+x)*3+c] = s
			}
		}
	}
	out := make([]byte, oh*ow*3)
	for oy := range oh {
		row := tmp[oy*w*3 : (oy+1)*w*3]
		for ox := range ow {
			start, wts := int(hf.Start[ox]), hf.W[ox*hf.Taps:ox*hf.Taps+int(hf.Count[ox])]
			for c := range 3 {
				var s float32
				for k, wk := range wts {
					s = float32(s + float32(row[(start+k)*3+c]*wk))
				}
				out[(oy*ow+ox)*3+c] = clamp8(int(math.RoundToEven(float64(s))))
			}
		}
	}
	return out, nil
}
