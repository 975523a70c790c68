package gpu

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/slottable"
)

var (
	// ErrInvalidOptions: Options that Validate refuses.
	ErrInvalidOptions = fmt.Errorf("gpu: options %w", errdefs.ErrInvalidArgument)
	// ErrUnavailable: no GPU delivery on this host (no cgo, no libcuda, no
	// device, no libnvcuvid); the message says which.
	ErrUnavailable = fmt.Errorf("gpu: GPU delivery %w", errdefs.ErrUnavailable)
	// ErrUnsupported: this GPU's NVDEC cannot decode the stream (codec,
	// bit depth or size outside cuvidGetDecoderCaps): take the CPU path.
	ErrUnsupported = fmt.Errorf("gpu: NVDEC %w", errdefs.ErrUnimplemented)
	// ErrDriver: a CUDA or NVDEC call failed; the message names it.
	ErrDriver = fmt.Errorf("gpu: driver call failed: %w", errdefs.ErrUnavailable)
	// ErrInvalidSegment: a Segment that cannot be decoded as given.
	ErrInvalidSegment = fmt.Errorf("gpu: segment %w", errdefs.ErrInvalidArgument)
	// ErrClosed: the device is closed.
	ErrClosed = fmt.Errorf("gpu: device closed: %w", errdefs.ErrFailedPrecondition)
)

// Device slot ring errors. The slot table's are internal/slottable's
// sentinels, which the host ring (package slots) exports too.
var (
	// ErrOverLimit: the ring does not fit in what is left of --gpu-memory-limit.
	ErrOverLimit = fmt.Errorf("gpu: device memory limit: %w", errdefs.ErrResourceExhausted)
	// ErrRingClosed: the ring is closed.
	ErrRingClosed = slottable.ErrClosed
	// ErrUnknownSlot: a release names an index outside the ring.
	ErrUnknownSlot = slottable.ErrUnknownSlot
	// ErrStaleGeneration: a release of an earlier use of the slot.
	ErrStaleGeneration = slottable.ErrStaleGeneration
	// ErrNotHeld: a release of a slot that is not held (a double release).
	ErrNotHeld = slottable.ErrNotHeld
	// ErrBadEvent: a device slot release names an event that cannot be
	// opened (not an interprocess event of this device; the fake: not a
	// fake event file), or another event than the slot's first release did.
	ErrBadEvent = fmt.Errorf("gpu: device slot release event %w", errdefs.ErrInvalidArgument)
	// ErrReleaseWait: a decode's device slot release event
	// (DecodeOptions.Wait) did not complete within Options.ReleaseWait
	// (the client's stream is stuck): the slot was not written.
	ErrReleaseWait = fmt.Errorf("gpu: device slot release event did not complete: %w", errdefs.ErrUnavailable)
	// ErrStillOpen: device memory was freed while another process still
	// had its IPC handle open (undefined behaviour on CUDA). Only the CPU
	// fake (ShmMemory) can see it: its importers hold a shared flock on
	// the slot's file while their handle is open (OpenShmHandle, the
	// Python loader's fake mapping).
	ErrStillOpen = fmt.Errorf("gpu: device memory freed while another process has its IPC handle open: %w", errdefs.ErrFailedPrecondition)
)
