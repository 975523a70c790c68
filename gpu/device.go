package gpu

import (
	"context"
	_ "embed"
	"fmt"
)

// rgbPTX is kernels/rgb.ptx (generated from kernels/rgb.cu by `make ptx`).
//
//go:embed kernels/rgb.ptx
var rgbPTX []byte

const rgbKernel = "weft_yuv420_to_rgb"

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
