package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
)

// checkNormalize: the kernels' normalised write (a window's normalize=,
// dtype=) for float16, bfloat16 and float32 with ImageNet's mean and std,
// at the stream's size and resized to 224x224. Two references: pixnorm's
// Normalize.RGB of the device's own uint8 RGB of the same frames (the same kernel without
// normalising): the normalisation's arithmetic, which must give the same
// bits (the kernel and the reference run the same float32 statements and
// round to nearest even); and Normalize.RGB of the Go reference's RGB of
// NVDEC's own NV12 (gpu.YUV420ToRGB, then gpu.ResizeRGB), end to end: equal
// wherever the uint8 RGB is (rgb_/rgb_resize_ allow it 1 LSB). ok: the
// first all equal and the uint8 RGB within 1 LSB of the Go reference.
func checkNormalize(ctx context.Context, d *gpu.Device, c clip) error {
	frames := []int{0, c.x.Len() - 1}
	p, want, nv12, err := decodeNV12(ctx, d, c, frames)
	if err != nil {
		return err
	}
	w, h := c.x.Config.Width, c.x.Config.Height
	mean, std := [3]float64{0.485, 0.456, 0.406}, [3]float64{0.229, 0.224, 0.225}
	diff, diffNV12, total, maxULP, maxLSB := 0, 0, 0, int64(0), 0
	var parts []string
	for _, sz := range [][2]int{{w, h}, {224, 224}} {
		ow, oh := sz[0], sz[1]
		size := gpu.DecodeOptions{Width: ow, Height: oh}
		u8, spec, err := decodeBack(ctx, d, c, p, want, ow*oh*3, size)
		if err != nil {
			return err
		}
		// the Go reference's uint8 RGB of NVDEC's NV12, resized as the kernels do
		tab, err := gpu.Tables(spec)
		if err != nil {
			return err
		}
		var refU8 []byte
		for _, f := range nv12 {
			rgb, err := gpu.YUV420ToRGB(f, tab)
			if err != nil {
				return err
			}
			if ow != w || oh != h {
				if rgb, err = gpu.ResizeRGB(rgb, h, w, oh, ow); err != nil {
					return err
				}
			}
			refU8 = append(refU8, rgb...)
		}
		if len(refU8) != len(u8) {
			return fmt.Errorf("%dx%d: %d uint8 values, the Go reference has %d", ow, oh, len(u8), len(refU8))
		}
		for i := range u8 {
			dd := int(u8[i]) - int(refU8[i])
			maxLSB = max(maxLSB, dd, -dd)
		}
		for _, dt := range []pixnorm.DType{pixnorm.Float16, pixnorm.BFloat16, pixnorm.Float32} {
			n := pixnorm.Normalize{Mean: mean, Std: std, DType: dt}
			o := size
			o.Normalize = &n
			got, _, err := decodeBack(ctx, d, c, p, want, ow*oh*3*dt.Size(), o)
			if err != nil {
				return fmt.Errorf("%s %dx%d: %w", dt, ow, oh, err)
			}
			ref, refNV12 := n.RGB(u8), n.RGB(refU8)
			if len(ref) != len(got) {
				return fmt.Errorf("%s %dx%d: %d bytes, the reference has %d", dt, ow, oh, len(got), len(ref))
			}
			es := dt.Size()
			nd := 0
			for i := 0; i < len(ref); i += es {
				a, b := elemBits(ref[i:i+es]), elemBits(got[i:i+es])
				if a != b {
					nd++
					maxULP = max(maxULP, ulpDistance(a, b, es))
				}
				if elemBits(refNV12[i:i+es]) != b {
					diffNV12++
				}
			}
			diff += nd
			total += len(ref) / es
			parts = append(parts, fmt.Sprintf("%s@%dx%d:%d", dt, ow, oh, nd))
		}
	}
	verdict := "ok"
	if diff > 0 || maxLSB > 1 {
		verdict = "fail"
	}
	result("rgb_norm_"+c.spec.Name, fmt.Sprintf("%s values_differing=%d/%d max_ulp=%d differing_by_case=%s vs_nv12_reference=%d/%d uint8_max_lsb=%d",
		verdict, diff, total, maxULP, strings.Join(parts, ","), diffNV12, total, maxLSB))
	return nil
}

// decodeBack decodes the wanted frames on the device with o into a buffer
// of n bytes per frame and reads it back (a check's copy, counted in
// Stats.FrameCopyBytes), with the colour rule used.
func decodeBack(ctx context.Context, d *gpu.Device, c clip, p video.Plan, want []int64, n int, o gpu.DecodeOptions) ([]byte, gpu.ColorSpec, error) {
	buf, err := d.Alloc(len(want) * n)
	if err != nil {
		return nil, gpu.ColorSpec{}, err
	}
	defer func() { _ = d.Free(buf) }()
	spec, err := d.DecodeRGB(ctx, c.segment(p), want, buf, o)
	if err != nil {
		return nil, spec, err
	}
	b, err := d.ReadBack(buf)
	return b, spec, err
}

// elemBits is a little-endian element of 2 or 4 bytes.
func elemBits(b []byte) uint32 {
	if len(b) == 2 {
		return uint32(binary.LittleEndian.Uint16(b))
	}
	return binary.LittleEndian.Uint32(b)
}

// ulpDistance is how many representable values lie between two floats'
// bits (sign-magnitude mapped onto a line).
func ulpDistance(a, b uint32, size int) int64 {
	line := func(x uint32) int64 {
		sign := uint32(1) << (8*size - 1)
		if x&sign != 0 {
			return -int64(x &^ sign)
		}
		return int64(x)
	}
	d := line(a) - line(b)
	return max(d, -d)
}
