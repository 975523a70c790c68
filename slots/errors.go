package slots

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

var (
	// ErrInvalidOptions: Options that Validate refuses.
	ErrInvalidOptions = fmt.Errorf("slots: options %w", errdefs.ErrInvalidArgument)
	// ErrNoSharedMemory: Options.Dir does not exist or is not a directory
	// (a host without /dev/shm); the caller falls back to plain Flight.
	ErrNoSharedMemory = fmt.Errorf("slots: shared memory %w", errdefs.ErrUnavailable)
	// ErrNoSpace: the ring's file could not be allocated (the tmpfs is full).
	ErrNoSpace = fmt.Errorf("slots: shared memory %w", errdefs.ErrResourceExhausted)
	// ErrClosed: the ring is closed.
	ErrClosed = fmt.Errorf("slots: ring closed: %w", errdefs.ErrFailedPrecondition)
	// ErrUnknownSlot: a release names an index outside the ring.
	ErrUnknownSlot = fmt.Errorf("slots: unknown slot: %w", errdefs.ErrInvalidArgument)
	// ErrStaleGeneration: a release names a generation that is not the
	// slot's current one (a release of an earlier use of the slot).
	ErrStaleGeneration = fmt.Errorf("slots: stale generation: %w", errdefs.ErrFailedPrecondition)
	// ErrNotHeld: a release of a slot that is not held (a double release).
	ErrNotHeld = fmt.Errorf("slots: slot not held: %w", errdefs.ErrFailedPrecondition)
	// ErrTooLarge: a record batch does not fit in the room left in a slot.
	ErrTooLarge = fmt.Errorf("slots: record batch too large for the slot: %w", errdefs.ErrResourceExhausted)
)
