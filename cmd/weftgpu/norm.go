package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/video"
)

// checkNormalize: the kernels' normalised write (a window's normalize=,
// dtype=) against gpu.NormalizeRGB applied to the device's own uint8 RGB
// of the same frames (NVDEC's NV12 through the same kernel without
// normalising), at the stream's size and resized to 224x224, for float16,
// bfloat16 and float32 with ImageNet's mean and std: ok when every value is
// the same bits (the kernel and the reference run the same float32
// statements and round to nearest even); the values differing and the
// largest difference in units of the last place are printed.
func checkNormalize(ctx context.Context, d *gpu.Device, c clip) error {
	frames := []int{0, c.x.Len() - 1}
	p, err := c.x.Plan(frames)
	if err != nil {
		return err
	}
	want := make([]int64, len(p.Keep))
	for i, k := range p.Keep {
		want[i] = k.PTS
	}
	w, h := c.x.Config.Width, c.x.Config.Height
	mean, std := [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
	diff, total, maxULP := 0, 0, int64(0)
	var parts []string
	for _, sz := range [][2]int{{w, h}, {224, 224}} {
		ow, oh := sz[0], sz[1]
		size := gpu.DecodeOptions{Width: ow, Height: oh}
		u8, err := decodeBack(ctx, d, c, p, want, ow*oh*3, size)
		if err != nil {
			return err
		}
		for _, dt := range []gpu.DType{gpu.Float16, gpu.BFloat16, gpu.Float32} {
			n := gpu.Normalize{Mean: mean, Std: std, DType: dt}
			o := size
			o.Normalize = &n
			got, err := decodeBack(ctx, d, c, p, want, ow*oh*3*dt.Size(), o)
			if err != nil {
				return fmt.Errorf("%s %dx%d: %w", dt, ow, oh, err)
			}
			ref := gpu.NormalizeRGB(u8, n)
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
			}
			diff += nd
			total += len(ref) / es
			parts = append(parts, fmt.Sprintf("%s@%dx%d:%d", dt, ow, oh, nd))
		}
	}
	verdict := "ok"
	if diff > 0 {
		verdict = "fail"
	}
	result("rgb_norm_"+c.spec.Name, fmt.Sprintf("%s values_differing=%d/%d max_ulp=%d differing_by_case=%s", verdict, diff, total, maxULP, strings.Join(parts, ",")))
	return nil
}

// decodeBack decodes the wanted frames on the device with o into a buffer
// of n bytes per frame and reads it back (a check's copy, counted in
// Stats.FrameCopyBytes).
func decodeBack(ctx context.Context, d *gpu.Device, c clip, p video.Plan, want []int64, n int, o gpu.DecodeOptions) ([]byte, error) {
	buf, err := d.Alloc(len(want) * n)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Free(buf) }()
	if _, err := d.DecodeRGB(ctx, c.segment(p), want, buf, o); err != nil {
		return nil, err
	}
	return d.ReadBack(buf)
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
