//go:build !cgo || !linux

package gpu

import (
	"context"
	"fmt"

	"github.com/weftdata/weft/video"
)

// Built reports whether this binary can use a GPU at all (cgo, linux).
const Built = false

// Device is unusable in a binary built without cgo: Open always fails.
type Device struct{}

// Buffer is device memory allocated by Alloc.
type Buffer struct {
	Ptr  uint64
	Size int
}

// Open fails: this binary was built with CGO_ENABLED=0 (or not for linux),
// so it cannot dlopen the driver.
func Open(ctx context.Context, opts Options) (*Device, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: this flightd was built without cgo (CGO_ENABLED=0), so it cannot load libcuda", ErrUnavailable)
}

func (d *Device) Info() Info                          { return Info{} }
func (d *Device) Caps(video.Codec, int) (Caps, error) { return Caps{}, ErrClosed }
func (d *Device) DecodeNV12(context.Context, Segment, []int64) ([]Frame, error) {
	return nil, ErrClosed
}
func (d *Device) DecodeRGB(context.Context, Segment, []int64, Buffer, ...DecodeOptions) (ColorSpec, error) {
	return ColorSpec{}, ErrClosed
}
func (d *Device) DecodeRGBTo(context.Context, Segment, []int64, []uint64, ...DecodeOptions) (ColorSpec, error) {
	return ColorSpec{}, ErrClosed
}
func (d *Device) Alloc(int) (Buffer, error)       { return Buffer{}, ErrClosed }
func (d *Device) Free(Buffer) error               { return ErrClosed }
func (d *Device) ReadBack(Buffer) ([]byte, error) { return nil, ErrClosed }
func (d *Device) Stats() Stats                    { return Stats{} }
func (d *Device) Close() error                    { return nil }
func (d *Device) Memory() Memory                  { return nil }
func (d *Device) RingEvents() *RingEvents         { return nil }
