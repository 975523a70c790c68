package gpu

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/weftdata/weft/video/pixnorm"
)

// rgbPTX is kernels/rgb.ptx (generated from kernels/rgb.cu by `make ptx`).
//
//go:embed kernels/rgb.ptx
var rgbPTX []byte

// The kernels of rgb.ptx: the conversion, and the resize's two passes.
const (
	rgbKernel     = "weft_yuv420_to_rgb"
	vresizeKernel = "weft_yuv420_to_rgb_vresize"
	hresizeKernel = "weft_rgb_hresize"
)

// DecodeOptions are one RGB decode's output choices (DecodeRGB,
// DecodeRGBTo).
type DecodeOptions struct {
	// Width, Height: the size every kept frame is resized to on the device
	// (python/weft/_video.py's resize, reference ResizeRGB; a window's
	// size=(H, W)). Both zero, or the stream's own size: no resize.
	Width, Height int
	// Normalize, when set, makes each frame's values floats of its DType
	// (its RGB of the uint8 RGB, after the resize) in the same kernel
	// write: a frame is then Width*Height*3*DType.Size() bytes.
	Normalize *pixnorm.Normalize
	// Wait is an event that must complete before the decode's first
	// write to a destination: a device slot's SlotUse.Wait, the client's
	// release event, so that the client's kernels still reading the slot's
	// previous step finish first. The decode polls it on the host
	// (cuEventQuery, 50 µs doubling to 2 ms) when it reaches that write
	// (NVDEC's decode of the pictures before it runs meanwhile), and ends
	// with ctx's error when ctx ends first, or ErrReleaseWait after
	// Options.ReleaseWait. Once it completed nothing is put on the decode's
	// stream (the client recording it again later holds nothing back).
	// 0: none.
	Wait uint64
}

// outDType is the frames' element type under opts (at most one, checked
// by outSize) and the normalisation, if any.
func outDType(opts []DecodeOptions) (pixnorm.DType, *pixnorm.Normalize, error) {
	if len(opts) == 0 || opts[0].Normalize == nil {
		return pixnorm.Uint8, nil, nil
	}
	n := *opts[0].Normalize
	if err := n.Validate(); err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrInvalidSegment, err)
	}
	return n.DType, &n, nil
}

// outSize is the frame size o gives a stream of w×h, and whether it is a
// resize; at most one DecodeOptions.
func outSize(opts []DecodeOptions, w, h int) (int, int, bool, error) {
	if len(opts) > 1 {
		return 0, 0, false, fmt.Errorf("%w: %d DecodeOptions (at most one)", ErrInvalidSegment, len(opts))
	}
	if len(opts) == 0 || (opts[0].Width == 0 && opts[0].Height == 0) {
		return w, h, false, nil
	}
	o := opts[0]
	if o.Width < 1 || o.Height < 1 || o.Width > 1<<15 || o.Height > 1<<15 {
		return 0, 0, false, fmt.Errorf("%w: resize to %dx%d", ErrInvalidSegment, o.Width, o.Height)
	}
	return o.Width, o.Height, o.Width != w || o.Height != h, nil
}

// Info describes a device.
type Info struct {
	Name          string
	DriverVersion int // cuDriverGetVersion, e.g. 13000
	UUID          [16]byte
}

// UUIDString is the device UUID as nvidia-smi prints it (GPU-xxxxxxxx-…).
func (i Info) UUIDString() string {
	u := i.UUID
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Caps is what cuvidGetDecoderCaps says of one codec and bit depth (4:2:0).
type Caps struct {
	Supported           bool
	NVDECs              int
	MaxWidth, MaxHeight int
	MinWidth, MinHeight int
}

// Stats count a Device's work since Open.
type Stats struct {
	SessionsCreated, SessionsReused int64 // NVDEC sessions (a decoder + stream) made, and taken from the pool
	DecodersCreated                 int64 // cuvidCreateDecoder calls
	Decoded, Displayed, Kept        int64 // pictures decoded, output by the parser, kept (mapped and written)
	EventWaits                      int64 // waits for a client's release event (DecodeOptions.Wait) that ended with it complete, before a write
	FrameCopyBytes                  int64 // frame bytes copied device<->host (DecodeNV12, ReadBack); 0 on the delivery path
	MemUsed, MemTotal               int64 // cuMemGetInfo: whole device
}

// Status is what flightd logs once at start.
type Status struct {
	On     bool
	Reason string // why not, when !On
	Info   Info
}

// Probe opens and closes the device to say whether GPU delivery can run here.
func Probe(ctx context.Context, opts Options) Status {
	d, err := Open(ctx, opts)
	if err != nil {
		return Status{Reason: err.Error()}
	}
	defer d.Close()
	return Status{On: true, Info: d.Info()}
}
