package gpu

import (
	"fmt"
	"time"

	"github.com/weftdata/weft/internal/membudget"
)

// Options says which driver libraries and device Open uses.
type Options struct {
	// CudaLib and CuvidLib are what dlopen is given: sonames searched on the
	// loader's path, or file paths (tests point both at the fake driver).
	CudaLib, CuvidLib string
	// Device is the CUDA device ordinal.
	Device int
	// MaxDecoders bounds the idle decoders kept per format (the pool).
	MaxDecoders int
	// Budget is --gpu-memory-limit (nil: unlimited): the device memory the
	// Device allocates for itself (colour tables, resize filters, each
	// session's resize scratch) is leased from it without waiting, as
	// device rings lease theirs (RingOptions.Budget). What does not fit
	// fails with ErrOverLimit.
	Budget *membudget.Budget
	// ReleaseWait bounds how long a decode waits for a device slot's
	// release event (DecodeOptions.Wait: the client's kernels still reading
	// the slot) before its first write into the slot: past it the decode
	// fails with ErrReleaseWait (the exchange refuses the step and the
	// client goes on on the host path). A client whose stream is stuck (a
	// hung collective, a spinning kernel) must not hold an NVDEC session,
	// the exchange and Device.Close forever. flightd's --gpu-release-wait.
	ReleaseWait time.Duration
}

// DefaultReleaseWait is Options.ReleaseWait's default.
const DefaultReleaseWait = 30 * time.Second

// DefaultOptions: the driver's sonames, device 0, 16 pooled decoders per
// format, release events waited for up to 30 s.
func DefaultOptions() Options {
	return Options{CudaLib: "libcuda.so.1", CuvidLib: "libnvcuvid.so.1", MaxDecoders: 16, ReleaseWait: DefaultReleaseWait}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	switch {
	case o.CudaLib == "" || o.CuvidLib == "":
		return fmt.Errorf("%w: CudaLib and CuvidLib must be set", ErrInvalidOptions)
	case o.Device < 0:
		return fmt.Errorf("%w: Device is %d; it must be 0 or more", ErrInvalidOptions, o.Device)
	case o.MaxDecoders < 1:
		return fmt.Errorf("%w: MaxDecoders is %d; it must be 1 or more", ErrInvalidOptions, o.MaxDecoders)
	case o.ReleaseWait <= 0:
		return fmt.Errorf("%w: ReleaseWait is %s; it must be more than 0", ErrInvalidOptions, o.ReleaseWait)
	}
	return nil
}
