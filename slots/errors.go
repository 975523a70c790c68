package slots

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/shmfile"
	"github.com/weftdata/weft/internal/slottable"
)

var (
	// ErrInvalidOptions: Options that Validate refuses.
	ErrInvalidOptions = fmt.Errorf("slots: options %w", errdefs.ErrInvalidArgument)
	// ErrNoSharedMemory: Options.Dir does not exist or is not a directory
	// (a host without /dev/shm); the caller falls back to plain Flight.
	ErrNoSharedMemory = fmt.Errorf("slots: shared memory %w", errdefs.ErrUnavailable)
	// ErrNoSpace: the ring's file could not be allocated (the tmpfs is full).
	// (shmfile's sentinel: the file helper is shared with gpu.ShmMemory).
	ErrNoSpace = shmfile.ErrNoSpace
	// ErrClosed: the ring is closed. The slot table's sentinels
	// (internal/slottable, shared with gpu.DeviceRing) under this
	// package's names.
	ErrClosed = slottable.ErrClosed
	// ErrUnknownSlot: a release names an index outside the ring.
	ErrUnknownSlot = slottable.ErrUnknownSlot
	// ErrStaleGeneration: a release names a generation that is not the
	// slot's current one (a release of an earlier use of the slot).
	ErrStaleGeneration = slottable.ErrStaleGeneration
	// ErrNotHeld: a release of a slot that is not held (a double release).
	ErrNotHeld = slottable.ErrNotHeld
	// ErrTooLarge: a record batch does not fit in the room left in a slot.
	ErrTooLarge = fmt.Errorf("slots: record batch too large for the slot: %w", errdefs.ErrResourceExhausted)
)
